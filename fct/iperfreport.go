package fct

import (
	"encoding/json"
	"fmt"
)

// IperfReport is what the project reads of iperf3's JSON report (-J): a
// UDP run's totals as the client sums them (Sum) and as the receiver
// counted them (SumReceived), a TCP run's retransmissions and goodput, and
// each stream's UDP counts.
type IperfReport struct {
	Error string `json:"error"`
	End   struct {
		Sum struct { // UDP
			Packets     int64 `json:"packets"`
			LostPackets int64 `json:"lost_packets"`
		} `json:"sum"`
		SumSent struct { // TCP
			Retransmits int `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Bytes         float64 `json:"bytes"`           // TCP
			BitsPerSecond float64 `json:"bits_per_second"` // TCP
			Packets       int64   `json:"packets"`         // UDP
			LostPackets   int64   `json:"lost_packets"`    // UDP
		} `json:"sum_received"`
		Streams []struct {
			UDP struct {
				Packets     int64 `json:"packets"`
				LostPackets int64 `json:"lost_packets"`
				OutOfOrder  int64 `json:"out_of_order"`
			} `json:"udp"`
		} `json:"streams"`
	} `json:"end"`
}

// ParseIperfReport decodes out, iperf3's JSON report; a report that names
// an error is one.
func ParseIperfReport(out []byte) (IperfReport, error) {
	var r IperfReport
	if err := json.Unmarshal(out, &r); err != nil {
		return r, err
	}
	if r.Error != "" {
		return r, fmt.Errorf("iperf3: %s", r.Error)
	}
	return r, nil
}

// OutOfOrder is the datagrams the streams received out of order.
func (r *IperfReport) OutOfOrder() int64 {
	var n int64
	for _, s := range r.End.Streams {
		n += s.UDP.OutOfOrder
	}
	return n
}
