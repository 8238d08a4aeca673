// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * TDMA exit gate: a raw TDMA data frame leaves a host only inside its
 * window, checked against the kernel's clock (bpf_ktime_get_ns, the
 * CLOCK_MONOTONIC the agents and the fabric manager read) at the point
 * where it leaves the host. A frame carries its window (the data header's
 * release time and the window trailer after it, tdma/wire); a frame
 * that would leave after its slot's end plus the gate's share of the
 * guard (the slot's end: the earlier of the sender's estimate and the
 * FM's, on the one clock of this machine), or before its slot's start
 * plus the guard on the FM's timeline, or was released after its
 * window's close or its lease, is returned to the host's agent instead of
 * being sent, which holds it and sends it again in a later window of its
 * destination. The exit gate stamps a frame it passes with the time it
 * entered the switch (the trailer's entry field), and one it returns with
 * the time it stopped it (its agent names the cause). Frames of other
 * kinds, and windows without a close (the paper's reactive mode), pass.
 *
 * Programs:
 *   lf_tdma_exit  XDP on the switch end of a host's veth (where the frame
 *                 has left the host's line): returns with XDP_TX
 *   lf_tdma_pass  XDP_PASS on the host end, so that the veth takes the
 *                 frames returned to it (veth needs NAPI on the receiver)
 *
 * Maps: tdma_gate_cfg (array[1]: enabled, the gate's share of the guard in
 * per mille), tdma_gate_count (per-CPU counters).
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define TG_ETH_HLEN 14
#define TG_ETHERTYPE 0x88B5
#define TG_MAGIC 0x5458
#define TG_HDR_LEN 37       /* wire.DataHdrLen */
#define TG_TRAILER_LEN 28   /* wire.WinTrailerLen */
#define TG_ENTRY_OFF 24     /* in the trailer */
#define TG_SENDTS_OFF 29    /* in the data header */
#define TG_UNKNOWN ((__s32)0x80000000)

struct tdma_gate_conf {
	__u32 enabled;
	__u32 share_permille; /* of the guard, past the slot's end */
};

struct tdma_gate_counters {
	__u64 passed;        /* data frames inside their window */
	__u64 returned;      /* data frames returned to the agent */
	__u64 returned_bytes;
	__u64 after_close;   /* of them: released after the window's close or the lease */
	__u64 other;         /* frames that are not TDMA data frames */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tdma_gate_conf);
} tdma_gate_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tdma_gate_counters);
} tdma_gate_count SEC(".maps");

enum tg_verdict {
	TG_OTHER = 0,
	TG_PASS = 1,
	TG_RETURN = 2,
};

static __always_inline __s32 tg_s32(const __u8 *p)
{
	return (__s32)(((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3]);
}

static __always_inline __u64 tg_u64(const __u8 *p)
{
	return ((__u64)tg_s32(p) << 32) | (__u32)tg_s32(p + 4);
}

/* tg_check decides on the frame in [data, end) at now. */
static __always_inline int tg_check(__u8 *data, const __u8 *end, __u64 now, __u32 *late_close)
{
	__u32 key = 0;
	struct tdma_gate_conf *cfg = bpf_map_lookup_elem(&tdma_gate_cfg, &key);
	if (!cfg || !cfg->enabled)
		return TG_OTHER;
	if (data + TG_ETH_HLEN + TG_HDR_LEN + TG_TRAILER_LEN > end)
		return TG_OTHER;
	if (((__u16)data[12] << 8 | data[13]) != TG_ETHERTYPE)
		return TG_OTHER;
	const __u8 *h = data + TG_ETH_HLEN;
	if (((__u16)h[0] << 8 | h[1]) != TG_MAGIC)
		return TG_OTHER;
	const __u8 *t = h + TG_HDR_LEN;
	__s64 send = (__s64)tg_u64(h + TG_SENDTS_OFF);
	__s32 due = tg_s32(t + 0), close = tg_s32(t + 4), fm_end = tg_s32(t + 8), lease = tg_s32(t + 16);
	__u64 guard = ((__u64)t[22] << 8 | t[23]) * 1000;
	if (close == TG_UNKNOWN || due == TG_UNKNOWN)
		return TG_PASS; /* no close: the reactive mode, not gated */
	if (close < 0 || (lease != TG_UNKNOWN && lease < 0)) {
		*late_close = 1;
		return TG_RETURN;
	}
	/* the slot's end (the earlier of the sender's estimate and the FM's)
	 * plus the gate's share of the guard; and not before the FM's slot
	 * start plus the guard, when the last slot's frames may still be in
	 * the switch */
	__s64 slot_end = send + due - (__s64)guard;
	if (fm_end != TG_UNKNOWN) {
		__s64 slot_ns = (__s64)((__u64)t[20] << 8 | t[21]) * 1000;
		if ((__s64)now < send + fm_end - slot_ns + (__s64)guard)
			return TG_RETURN;
		if (send + fm_end < slot_end)
			slot_end = send + fm_end;
	}
	__s64 deadline = slot_end + (__s64)(guard * cfg->share_permille / 1000);
	if ((__s64)now > deadline)
		return TG_RETURN;
	return TG_PASS;
}

static __always_inline void tg_count(int v, __u32 late_close, __u64 len)
{
	__u32 key = 0;
	struct tdma_gate_counters *c = bpf_map_lookup_elem(&tdma_gate_count, &key);
	if (!c)
		return;
	switch (v) {
	case TG_PASS:
		c->passed++;
		break;
	case TG_RETURN:
		c->returned++;
		c->returned_bytes += len;
		c->after_close += late_close;
		break;
	default:
		c->other++;
	}
}

SEC("xdp")
int lf_tdma_exit(struct xdp_md *ctx)
{
	__u8 *data = (__u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	__u32 late_close = 0;
	__u64 now = bpf_ktime_get_ns();
	int v = tg_check(data, end, now, &late_close);
	tg_count(v, late_close, end - data);
	if (v != TG_OTHER && data + TG_ETH_HLEN + TG_HDR_LEN + TG_TRAILER_LEN <= end) {
		/* stamp when it entered the switch (a returned frame: when it
		 * was stopped), from its release */
		__s64 send = (__s64)tg_u64(data + TG_ETH_HLEN + TG_SENDTS_OFF);
		__s64 d = (__s64)now - send;
		if (d > 0x7fffffff)
			d = 0x7fffffff;
		if (d < -0x7fffffff)
			d = -0x7fffffff;
		__u8 *e = data + TG_ETH_HLEN + TG_HDR_LEN + TG_ENTRY_OFF;
		e[0] = (__u32)d >> 24;
		e[1] = (__u32)d >> 16;
		e[2] = (__u32)d >> 8;
		e[3] = (__u32)d;
	}
	if (v == TG_RETURN)
		return XDP_TX; /* back out of the switch's port to the host's end */
	return XDP_PASS;
}

SEC("xdp")
int lf_tdma_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual BSD/GPL";
