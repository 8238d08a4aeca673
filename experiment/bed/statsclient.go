package bed

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/linkfabric/linkfabric/netns"
)

// MetricsAddr is where `linkfabric run` serves statistics (the loopback of
// its own namespace).
const MetricsAddr = "127.0.0.1:9477"

// FetchStats reads /stats.json of the dataplane running in namespace ns into v.
func FetchStats(ctx context.Context, ns string, v any) error {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := netns.Do(ns, func() error {
			var err error
			// The socket is created on this thread, inside ns.
			c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+MetricsAddr+"/stats.json", nil)
	resp, err := cl.Do(req)
	if err != nil {
		return fmt.Errorf("statistics of the dataplane in %s: %w", ns, err)
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// DPStats is the part of /stats.json the experiments read.
type DPStats struct {
	Dataplane struct {
		Host, Link struct {
			RX, TX struct{ Frames, Dropped uint64 }
		}
		Polls, Loops uint64
	} `json:"dataplane"`
	LinkGuardian *LGDoc  `json:"linkguardian"`
	Host0        PortDoc `json:"port_host0"`
}

// PortDoc is the part of a port's entry in /stats.json the experiments
// read.
type PortDoc struct {
	Sockets []struct {
		XDPStatistics struct{ RxRingFull, RxDropped uint64 } `json:"xdp_statistics"`
		TxKicks       uint64                                 `json:"tx_kicks"`
	} `json:"sockets"`
}

// TxKicks is the transmit wake-ups (sendto calls) of the port's sockets.
func (p *PortDoc) TxKicks() uint64 {
	var n uint64
	for _, k := range p.Sockets {
		n += k.TxKicks
	}
	return n
}

// RxDrops is what the port's sockets dropped on receive (RX ring full, or
// no fill buffer).
func (p *PortDoc) RxDrops() uint64 {
	var n uint64
	for _, k := range p.Sockets {
		n += k.XDPStatistics.RxRingFull + k.XDPStatistics.RxDropped
	}
	return n
}

// HostIngressDrops is the frames the host port's sockets dropped on receive
// (RX ring full, or no fill buffer): what the host offered that never
// entered the dataplane.
func (s *DPStats) HostIngressDrops() uint64 { return s.Host0.RxDrops() }

// LGDoc is the part of /stats.json's "linkguardian" the experiments read.
type LGDoc struct {
	Core struct {
		Sender         *LGSenderDoc
		Receiver       *LGReceiverDoc
		HeldByCreditNs int64 `json:"held_by_credit_ns"`
		HeldByPauseNs  int64 `json:"held_by_pause_ns"`
	} `json:"core"`
	RetxDelayUS struct {
		Count               uint64
		P50, P99, P999, Max float64
	} `json:"retx_delay_us"`
	Copies int64 `json:"copies"`
	// Session is the link session's state and dead-peer timeouts.
	Session struct {
		State    string `json:"state"`
		Counters struct{ PeerTimeouts uint64 }
	} `json:"session"`
}

// LGSenderDoc is the LinkGuardian sender's counters in /stats.json.
type LGSenderDoc struct {
	DataSent, RetxCopies, DummiesSent, AcksRx, TxBufPeakFrames, TxBufPeakBytes, TxFull, PausedRefusals uint64
	// FastSent: data frames the kernel send path numbered and sent.
	FastSent uint64
}

// LGReceiverDoc is the LinkGuardian receiver's counters in /stats.json.
type LGReceiverDoc struct {
	DataRx, LostDetected, Recovered, AckNoTimeouts, DupDropped, PausesSent, ResumesSent, ReorderPeakFrames, ReorderPeakBytes, ExplicitAcksSent, DummiesRx uint64
	// FastDelivered: frames the kernel receive path delivered, of
	// Delivered.
	FastDelivered, Delivered uint64
}
