package lgpipe

import (
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/xdp"
)

// Every lane is exported, each with its link session, under the link
// port's name and its number.
func TestRegisterEveryLane(t *testing.T) {
	u, err := xdp.NewUmem(xdp.UmemConfig{FrameSize: 4096, FrameCount: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	cfg := dataplane.Config{Mode: ModeLG, HostPort: "host0", LinkPort: "link0", Workers: 2, RingSize: 256, Batch: 32}
	var in dataplane.Instance
	if _, err := dataplane.NewMemWorker(cfg, u, [][6]byte{{2}, {2, 1}}, func(d *dataplane.Dataplane, cfg *dataplane.Config) (dataplane.Instance, error) {
		in, err = newLGInstance(d, cfg)
		return in, err
	}); err != nil {
		t.Fatal(err)
	}
	r := metrics.NewRegistry()
	if err := in.Register(r); err != nil {
		t.Fatal(err)
	}
	v := r.Values()
	for _, lane := range []string{"0", "1"} {
		for _, k := range []string{
			`linkfabric_lg_sender_retx_copies_total{lane="` + lane + `",port="link0"}`,
			`linkfabric_lg_receiver_lost_detected_total{lane="` + lane + `",port="link0"}`,
			`linkfabric_link_session_up{lane="` + lane + `",port="link0"}`,
		} {
			if _, ok := v[k]; !ok {
				t.Errorf("%s not exported", k)
			}
		}
	}
}
