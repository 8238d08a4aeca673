/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * impair.h: link impairment stage shared by the dataplane port program
 * (port.c) and the standalone impairer (impairer.c).
 *
 * Model: a two-state Gilbert-Elliott chain per CPU. In the state the frame
 * finds the chain in (Good or Bad) it is dropped with that state's loss
 * probability; then the chain makes one transition (G->B with p_gb, B->G
 * with p_bg). Bernoulli loss is the degenerate chain loss_good = p, p_gb = 0.
 * All probabilities are u32 thresholds: an event with probability p happens
 * when a uniform u32 is below p * 2^32; the threshold 0xffffffff means
 * "always" (probability 1 is not otherwise representable).
 *
 * Maps: impair_cfg (array[1] of impair_config), impair_rng (per-CPU
 * impair_state), impair_count (per-CPU impair_stats). Userspace writes
 * impair_cfg[0] at any time; the program reads it on every
 * frame. Each change carries a new generation, and a CPU whose state was
 * seeded for another generation reseeds its PRNG from seed and its CPU id and
 * restarts in Good, so runs with the same seed on the same CPU repeat exactly.
 */
#ifndef LINKFABRIC_IMPAIR_H
#define LINKFABRIC_IMPAIR_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define LF_ETH_HLEN 14
/* Upper bound on a flipped byte's offset (64 KiB frames). */
#define LF_MAX_FRAME 0xffff

enum lf_verdict {
	LF_KEEP = 0,
	LF_DROP = 1,
	LF_FLIPPED = 2,
};

struct impair_config {
	__u32 enabled;    /* 0: stage off, frames untouched and uncounted */
	__u32 model;      /* 0 Bernoulli, 1 Gilbert-Elliott; informational */
	__u32 loss_good;  /* drop threshold in Good */
	__u32 loss_bad;   /* drop threshold in Bad */
	__u32 p_gb;       /* transition threshold Good -> Bad */
	__u32 p_bg;       /* transition threshold Bad -> Good */
	__u32 flip;       /* per-frame bit-flip threshold */
	__u32 _pad;
	__u64 seed;
	__u64 generation; /* bumped by userspace on every change */
};

struct impair_state {
	__u64 rng;          /* splitmix64 state */
	__u64 generation;   /* config generation this CPU was seeded for */
	__u32 bad;          /* 1 while in the Bad state */
	__u32 last_dropped; /* previous frame on this CPU was dropped */
};

struct impair_stats {
	__u64 seen;    /* frames that went through the stage */
	__u64 dropped; /* frames dropped */
	__u64 flipped; /* frames with one bit flipped */
	__u64 bursts;  /* runs of consecutive drops (per CPU) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct impair_config);
} impair_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct impair_state);
} impair_rng SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct impair_stats);
} impair_count SEC(".maps");

static __always_inline __u64 lf_mix64(__u64 z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* splitmix64: one 64-bit output per call, never stuck at zero. */
static __always_inline __u64 lf_next(struct impair_state *st)
{
	st->rng += 0x9e3779b97f4a7c15ULL;
	return lf_mix64(st->rng);
}

static __always_inline int lf_chance(__u32 thr, __u32 r)
{
	return thr == 0xffffffffU || r < thr;
}

/* Flip one uniformly chosen bit of the bytes after the Ethernet header,
 * anywhere in the frame: a multi-buffer frame (the programs are loaded with
 * frags, for jumbo MTUs) has bytes beyond its linear part, reached through
 * bpf_xdp_load_bytes/bpf_xdp_store_bytes. Returns 1 if a bit was flipped. */
static __always_inline int lf_flip_bit(struct xdp_md *ctx, __u64 r)
{
	__u32 len = (__u32)bpf_xdp_get_buff_len(ctx);
	__u32 off;
	__u8 b;

	if (len <= LF_ETH_HLEN)
		return 0;
	len -= LF_ETH_HLEN;
	off = LF_ETH_HLEN + (__u32)(r >> 3) % len;
	off &= LF_MAX_FRAME;
	if (bpf_xdp_load_bytes(ctx, off, &b, 1))
		return 0;
	b ^= (__u8)(1U << (r & 7));
	if (bpf_xdp_store_bytes(ctx, off, &b, 1))
		return 0;
	return 1;
}

/* Runs the impairment stage on one frame. */
static __always_inline enum lf_verdict lf_impair_frame(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct impair_config *cfg;
	struct impair_state *st;
	struct impair_stats *stats;
	__u64 r;
	int drop;

	cfg = bpf_map_lookup_elem(&impair_cfg, &zero);
	if (!cfg || !cfg->enabled)
		return LF_KEEP;
	st = bpf_map_lookup_elem(&impair_rng, &zero);
	stats = bpf_map_lookup_elem(&impair_count, &zero);
	if (!st || !stats)
		return LF_KEEP;

	if (st->generation != cfg->generation) {
		__u64 cpu = bpf_get_smp_processor_id();

		st->rng = lf_mix64(cfg->seed ^ ((cpu + 1) * 0xd1b54a32d192ed03ULL));
		st->generation = cfg->generation;
		st->bad = 0;
		st->last_dropped = 0;
	}

	stats->seen++;
	r = lf_next(st);
	if (st->bad)
		drop = lf_chance(cfg->loss_bad, (__u32)r);
	else
		drop = lf_chance(cfg->loss_good, (__u32)r);
	/* One transition per frame, decided by the high half. */
	if (st->bad) {
		if (lf_chance(cfg->p_bg, (__u32)(r >> 32)))
			st->bad = 0;
	} else {
		if (lf_chance(cfg->p_gb, (__u32)(r >> 32)))
			st->bad = 1;
	}

	if (drop) {
		stats->dropped++;
		if (!st->last_dropped)
			stats->bursts++;
		st->last_dropped = 1;
		return LF_DROP;
	}
	st->last_dropped = 0;

	if (cfg->flip) {
		r = lf_next(st);
		if (lf_chance(cfg->flip, (__u32)r) && lf_flip_bit(ctx, r >> 32)) {
			stats->flipped++;
			return LF_FLIPPED;
		}
	}
	return LF_KEEP;
}

#endif /* LINKFABRIC_IMPAIR_H */
