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
 * The arrival gate is the same rule where the frames of two senders meet:
 * at the receiver's end of its veth, where the kernel stamps the frame as
 * it hands it up (the receiver's SO_TIMESTAMPNS, taken before the TC
 * ingress hook whatever net.core.netdev_tstamp_prequeue says) and
 * before the receiver's packet socket (bound to the data ethertype: after
 * the hook) gets it. A frame that entered the switch in its slot but is
 * there after the slot's end plus the guard (less a margin) is when the
 * next slot's sender may be sending to the same port: the switch or the
 * receiver's input path held it (a vCPU stopped with the frame inside).
 * Checked against the clock at the hook, which is past the frame's stamp:
 * no frame stamped late passes. It goes back into the switch marked held
 * (bpf_redirect_peer: to the ingress of the veth's switch end, past no
 * queue), and the program on that switch port's TC ingress, seeing the
 * mark, redirects it to the ingress of its sender's end
 * (tdma_gate_ports, by the data header's source) and the sender's agent,
 * which sends it again as it does a frame the exit gate returned. Every
 * frame a gate returns carries TG_RETURNED, so that the arrival gate at
 * its sender passes it; the exit gate clears both marks on every frame it
 * passes. (An XDP arrival gate, tried first, left the rest of the NAPI
 * poll between its check and the stamp: frames 1.6 and 10.8 ms late
 * passed it under a stolen vCPU.)
 *
 * Programs:
 *   lf_tdma_exit    XDP on the switch end of a host's veth (where the frame
 *                   has left the host's line): returns with XDP_TX
 *   lf_tdma_back    TC ingress on the switch end: a frame held at its
 *                   receiver (from that receiver's end alone) goes on to
 *                   its sender's end
 *   lf_tdma_pass    XDP_PASS on the host end, so that the veth takes the
 *                   frames returned to it (veth needs NAPI on the receiver)
 *   lf_tdma_arrive  TC ingress on the host end: returns a late frame
 *
 * Maps: tdma_gate_cfg (array[1]: enabled, the exit gate's share of the
 * guard in per mille, the arrival gate's margin), tdma_gate_count (per-CPU
 * counters), tdma_gate_ports (the switch end of each host's veth, its
 * ifindex by host index).
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
#define TG_SRC_OFF 2        /* in the data header */
#define TG_DST_OFF 4        /* in the data header */
#define TG_FLAGS_OFF 7      /* in the data header */
#define TG_RETURNED 0x10    /* wire.DataReturned */
#define TG_HELD 0x20        /* wire.DataHeld */
#define TG_MAX_HOSTS 64
#define TG_UNKNOWN ((__s32)0x80000000)

struct tdma_gate_conf {
	__u32 enabled;
	__u32 share_permille; /* of the guard, past the slot's end */
	__u32 margin_ns;      /* the arrival gate's, before the slot's end plus the guard */
};

struct tdma_gate_counters {
	__u64 passed;        /* data frames inside their window */
	__u64 returned;      /* data frames returned to the agent */
	__u64 returned_bytes;
	__u64 after_close;   /* of them: released after the window's close or the lease */
	__u64 other;         /* frames that are not TDMA data frames */
	__u64 arrived;       /* data frames the arrival gate let through */
	__u64 held;          /* data frames the arrival gate returned: too late */
	__u64 held_bytes;
	__u64 sent_back;     /* held frames redirected to their sender's port */
	__u64 send_back_dropped; /* held frames not from their receiver's port, or whose sender has none */
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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TG_MAX_HOSTS);
	__type(key, __u32);
	__type(value, __u32);
} tdma_gate_ports SEC(".maps");

enum tg_verdict {
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

static __always_inline struct tdma_gate_conf *tg_conf(void)
{
	__u32 key = 0;
	struct tdma_gate_conf *cfg = bpf_map_lookup_elem(&tdma_gate_cfg, &key);
	return cfg && cfg->enabled ? cfg : NULL;
}

static __always_inline struct tdma_gate_counters *tg_counters(void)
{
	__u32 key = 0;
	return bpf_map_lookup_elem(&tdma_gate_count, &key);
}

/* tg_is_data tells whether [data, end) is a TDMA data frame, its data
 * header and trailer included (then data + TG_ETH_HLEN is its header). */
static __always_inline int tg_is_data(const __u8 *data, const __u8 *end)
{
	if (data + TG_ETH_HLEN + TG_HDR_LEN + TG_TRAILER_LEN > end)
		return 0;
	const __u8 *h = data + TG_ETH_HLEN;
	return ((__u16)data[12] << 8 | data[13]) == TG_ETHERTYPE && ((__u16)h[0] << 8 | h[1]) == TG_MAGIC;
}

/* tg_guard is the guard, in ns, of the window in trailer t. */
static __always_inline __u64 tg_guard(const __u8 *t)
{
	return ((__u64)t[22] << 8 | t[23]) * 1000;
}

/* tg_gated tells whether data frame h has a window the gates judge: one
 * with a close (the paper's reactive mode has none, and is not gated). */
static __always_inline int tg_gated(const __u8 *h)
{
	const __u8 *t = h + TG_HDR_LEN;
	return tg_s32(t + 4) != TG_UNKNOWN && tg_s32(t + 0) != TG_UNKNOWN;
}

/* tg_check decides on data frame h leaving its host at now. */
static __always_inline int tg_check(const __u8 *h, __u64 now, __u32 share, __u32 *late_close)
{
	const __u8 *t = h + TG_HDR_LEN;
	__s64 send = (__s64)tg_u64(h + TG_SENDTS_OFF);
	__s32 due = tg_s32(t + 0), close = tg_s32(t + 4), fm_end = tg_s32(t + 8), lease = tg_s32(t + 16);
	__u64 guard = tg_guard(t);
	if (!tg_gated(h))
		return TG_PASS;
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
	__s64 deadline = slot_end + (__s64)(guard * share / 1000);
	if ((__s64)now > deadline)
		return TG_RETURN;
	return TG_PASS;
}

/* tg_late tells whether gated data frame h arriving at now is past its
 * slot's end plus the guard on the FM's timeline (the sender's estimate
 * of it without one), less margin: in the next slot, whose sender may be
 * sending to the same port (gate.Classify's rule). */
static __always_inline int tg_late(const __u8 *h, __u64 now, __u32 margin)
{
	const __u8 *t = h + TG_HDR_LEN;
	__s64 send = (__s64)tg_u64(h + TG_SENDTS_OFF);
	__s32 fm_end = tg_s32(t + 8);
	__s64 at = send + tg_s32(t + 0);
	if (fm_end != TG_UNKNOWN)
		at = send + fm_end + (__s64)tg_guard(t);
	return (__s64)now + (__s64)margin > at;
}

/* tg_stamp writes now, from the frame's release, into its trailer's entry
 * field (clamped to 32 bits). */
static __always_inline void tg_stamp(__u8 *h, __u64 now)
{
	__s64 d = (__s64)now - (__s64)tg_u64(h + TG_SENDTS_OFF);
	if (d > 0x7fffffff)
		d = 0x7fffffff;
	if (d < -0x7fffffff)
		d = -0x7fffffff;
	__u8 *e = h + TG_HDR_LEN + TG_ENTRY_OFF;
	e[0] = (__u32)d >> 24;
	e[1] = (__u32)d >> 16;
	e[2] = (__u32)d >> 8;
	e[3] = (__u32)d;
}

SEC("xdp")
int lf_tdma_exit(struct xdp_md *ctx)
{
	__u8 *data = (__u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	struct tdma_gate_conf *cfg = tg_conf();
	struct tdma_gate_counters *c = tg_counters();
	if (!cfg || !tg_is_data(data, end)) {
		if (c)
			c->other++;
		return XDP_PASS;
	}
	__u8 *h = data + TG_ETH_HLEN;
	__u32 late_close = 0;
	__u64 now = bpf_ktime_get_ns();
	int v = tg_check(h, now, cfg->share_permille, &late_close);
	/* when it entered the switch (a returned frame: when it was stopped) */
	tg_stamp(h, now);
	if (v == TG_RETURN) {
		if (c) {
			c->returned++;
			c->returned_bytes += end - data;
			c->after_close += late_close;
		}
		h[TG_FLAGS_OFF] |= TG_RETURNED;
		return XDP_TX; /* back out of the switch's port to the host's end */
	}
	if (c)
		c->passed++;
	/* the marks are the gates' alone */
	h[TG_FLAGS_OFF] &= ~(TG_RETURNED | TG_HELD);
	return XDP_PASS;
}

SEC("xdp")
int lf_tdma_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

#define TG_TC_DROP 2
#define TG_TC_NEXT (-1)

/* tg_skb_data returns the data header of the TDMA data frame skb holds,
 * pulled into its linear part, or NULL. */
static __always_inline __u8 *tg_skb_data(struct __sk_buff *skb)
{
	if (skb->len < TG_ETH_HLEN + TG_HDR_LEN + TG_TRAILER_LEN)
		return NULL;
	__u8 *data = (__u8 *)(long)skb->data, *end = (__u8 *)(long)skb->data_end;
	if (data + TG_ETH_HLEN + TG_HDR_LEN + TG_TRAILER_LEN > end) {
		if (bpf_skb_pull_data(skb, TG_ETH_HLEN + TG_HDR_LEN + TG_TRAILER_LEN))
			return NULL;
		data = (__u8 *)(long)skb->data;
		end = (__u8 *)(long)skb->data_end;
	}
	if (!tg_is_data(data, end))
		return NULL;
	return data + TG_ETH_HLEN;
}

SEC("tc")
int lf_tdma_arrive(struct __sk_buff *skb)
{
	struct tdma_gate_conf *cfg = tg_conf();
	if (!cfg)
		return TG_TC_NEXT;
	__u8 *h = tg_skb_data(skb);
	/* a frame a gate returned to this host (its own) passes */
	if (!h || (h[TG_FLAGS_OFF] & TG_RETURNED) || !tg_gated(h))
		return TG_TC_NEXT;
	struct tdma_gate_counters *c = tg_counters();
	__u64 now = bpf_ktime_get_ns();
	if (!tg_late(h, now, cfg->margin_ns)) {
		if (c)
			c->arrived++;
		return TG_TC_NEXT;
	}
	if (c) {
		c->held++;
		c->held_bytes += skb->len;
	}
	tg_stamp(h, now); /* when it was stopped */
	h[TG_FLAGS_OFF] |= TG_RETURNED | TG_HELD;
	/* into the switch end's ingress, which sends it on to its sender */
	return bpf_redirect_peer(skb->ifindex, 0);
}

/* lf_tdma_back redirects a frame held at its receiver, which came back
 * into the switch at its port, to its sender's end; only the receiver's
 * own port may send it back (its entry for the data header's destination),
 * so that no host gets a frame past the exit gate by marking it held. */
SEC("tc")
int lf_tdma_back(struct __sk_buff *skb)
{
	__u8 *h = tg_skb_data(skb);
	if (!h || !(h[TG_FLAGS_OFF] & TG_HELD))
		return TG_TC_NEXT;
	struct tdma_gate_counters *c = tg_counters();
	__u32 src = (__u32)h[TG_SRC_OFF] << 8 | h[TG_SRC_OFF + 1];
	__u32 dst = (__u32)h[TG_DST_OFF] << 8 | h[TG_DST_OFF + 1];
	__u32 *in = bpf_map_lookup_elem(&tdma_gate_ports, &dst);
	__u32 *out = bpf_map_lookup_elem(&tdma_gate_ports, &src);
	if (!in || !out || !*out || *in != skb->ingress_ifindex) {
		if (c)
			c->send_back_dropped++;
		return TG_TC_DROP;
	}
	if (c)
		c->sent_back++;
	return bpf_redirect_peer(*out, 0);
}

char _license[] SEC("license") = "Dual BSD/GPL";
