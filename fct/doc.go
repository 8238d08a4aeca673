// Package fct measures flow completion time (FCT) of short TCP flows between
// two network namespaces, following the LinkGuardian paper's methodology
// (SIGCOMM'23 §4.3: many flows of 143 B, 24,387 B and 2 MB, one TCP
// connection each, tail percentiles up to 99.99, TCP with SACK, RACK-TLP,
// rto_min 1 ms, no metrics caching).
//
// Data always flows from the client host h1 (sender) to the server host h2
// (receiver), i.e. across the sw1→sw2 direction of the testbed where the
// link impairment is. Two tools:
//
// Builtin (RunBuiltin): one process, a Go TCP listener created inside h2's
// namespace and client sockets created on OS threads switched into h1's
// namespace. Per flow: connect(), write exactly Size bytes of payload (the
// first HeaderSize=16 of which carry flow id and size), the server reads
// them, replies with one byte, the client reads TCP_INFO and closes with
// SO_LINGER 0 (RST: no TIME_WAIT, so 10^5 back-to-back flows do not exhaust
// ephemeral ports; this happens after the measurement and does not distort
// it). FCT = the instant the server application's read returned the last of
// the Size bytes minus the instant just before the client's connect(), both
// from the same monotonic clock. It thus includes the 3-way handshake, all
// data transfer including loss recovery, and receiver wake-up; it does not
// include the final ACK's trip back to the sender. Retransmitted =
// tcpi_total_retrans > 0 on the sender socket (SYN, data and TLP
// retransmissions) read once the receiver confirmed.
//
// iperf (RunIperf): iperf 2 -s in h2 and one `iperf -c -n SIZE` process per
// flow in h1, with tcpdump on h1's interface; FCT per connection from the
// capture (ParsePcap): SYN sent → ACK covering the last data byte received,
// as seen at the sender's interface. iperf 2 counts its own ~60 B test
// header in -n and writes it separately, so a "143 B" iperf flow is two
// segments, and the receiver's delayed ACK of the final segment (and the
// sender's TLP probe when that ACK is late) lands inside the FCT; expect
// iperf FCTs of short flows to be larger and noisier than builtin ones.
//
// Statistics (Summarize, NewResults): per arm and size, nearest-rank
// percentiles over completed flows (report.Percentile: the value at rank
// ceil(p/100·n), computed in integer arithmetic), failures counted
// separately, ratios to a reference arm ("noloss"). Output: WriteTable,
// WriteCSV, JSON through report.Encode or report.WriteJSON,
// PlotTailCDF/PlotAllSizes (tail CDF PNGs like the paper's Figures 10-12),
// GoodputTable (Table 3). TCP knobs: ApplyTCPSettings, PaperTCPSettings.
package fct
