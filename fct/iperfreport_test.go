package fct

import "testing"

// TestParseIperfReport: the fields the project reads of iperf3's report,
// streams' out-of-order datagrams summed, and a report naming an error is
// one.
func TestParseIperfReport(t *testing.T) {
	r, err := ParseIperfReport([]byte(`{"end":{"sum":{"packets":100,"lost_packets":3},
		"sum_sent":{"retransmits":7},
		"sum_received":{"bytes":1e6,"bits_per_second":8e6,"packets":99,"lost_packets":4},
		"streams":[{"udp":{"packets":60,"lost_packets":1,"out_of_order":2}},{"udp":{"packets":40,"lost_packets":2,"out_of_order":5}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := r.End
	if e.Sum.Packets != 100 || e.Sum.LostPackets != 3 || e.SumSent.Retransmits != 7 || e.SumReceived.Bytes != 1e6 ||
		e.SumReceived.BitsPerSecond != 8e6 || e.SumReceived.Packets != 99 || e.SumReceived.LostPackets != 4 ||
		len(e.Streams) != 2 || e.Streams[1].UDP.Packets != 40 || e.Streams[1].UDP.LostPackets != 2 || r.OutOfOrder() != 7 {
		t.Errorf("decoded %+v, out of order %d", r, r.OutOfOrder())
	}
	if _, err := ParseIperfReport([]byte(`{"error":"unable to connect to server"}`)); err == nil {
		t.Error("a report naming an error decoded without one")
	}
	if _, err := ParseIperfReport([]byte(`iperf3: error`)); err == nil {
		t.Error("text that is not JSON decoded")
	}
}
