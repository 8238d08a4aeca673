// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Dataplane port: count the frame, apply the impairment stage when it is
 * enabled, then redirect to the AF_XDP socket of the frame's RX queue (or
 * pass it to the kernel stack when that queue has no socket). */
#include "impair.h"

#define LF_MAX_QUEUES 64

struct port_counters {
	__u64 rx_frames;      /* frames seen by the program */
	__u64 rx_bytes;       /* their bytes (linear part) */
	__u64 redirected;     /* handed to an XSK (bpf_redirect_map said so) */
	__u64 passed;         /* no XSK on that queue: passed to the stack */
	__u64 impair_dropped; /* dropped by the impairment stage */
	__u64 impair_flipped; /* one bit flipped by the impairment stage */
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, LF_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_counters);
} port_count SEC(".maps");

SEC("xdp")
int lf_port(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct port_counters *c = bpf_map_lookup_elem(&port_count, &zero);
	enum lf_verdict v;
	long act;

	if (c) {
		c->rx_frames++;
		c->rx_bytes += ctx->data_end - ctx->data;
	}
	v = lf_impair_frame(ctx);
	if (v == LF_DROP) {
		if (c)
			c->impair_dropped++;
		return XDP_DROP;
	}
	if (v == LF_FLIPPED && c)
		c->impair_flipped++;

	act = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
	if (c) {
		if (act == XDP_REDIRECT)
			c->redirected++;
		else
			c->passed++;
	}
	return act;
}

char _license[] SEC("license") = "Dual BSD/GPL";
