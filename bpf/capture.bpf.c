// SPDX-License-Identifier: Apache-2.0
/*
 * burstscope's XDP capture program. Every frame on the mirror port is counted in one verdict and,
 * where a socket is bound on its RX queue, redirected to that queue's AF_XDP socket with a
 * timestamp taken here (long before user space sees it) and its wire length in the metadata area.
 * Frames longer than the snap length are cut: burstscope measures lengths and headers, so copying
 * payload into user space is waste.
 *
 * Four entry points share the code: bs_capture stamps with bpf_ktime_get_ns(); bs_capture_nic first
 * asks the driver for the NIC's RX timestamp through the XDP metadata kfunc and must be loaded
 * device-bound. bs_capture_head and bs_capture_nic_head are the same for kernels whose verifier
 * refuses bpf_xdp_adjust_meta() to XDP programs (seen: a 6.18 kernel, "program of this type cannot
 * use helper"): they write the same metadata in front of the frame itself, by
 * bpf_xdp_adjust_head(), and user space takes it off again.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#include "capture_shared.h"

/* Configuration, fixed at load time by user space (rodata). */
const volatile __u32 cfg_ip_only =
    0; /* pass frames that are not IPv4/IPv6 (after up to two VLAN tags) */
const volatile __u32 cfg_snaplen = 0; /* cut redirected frames to this many bytes; 0: never */
const volatile __u32 cfg_bins =
    1; /* count every frame into 100 us bins (off: the cost benchmark's A) */

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, BS_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BS_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Every CPU's ring of bins in one array, CPU c's at [c * BS_BIN_SLOTS, (c + 1) * BS_BIN_SLOTS):
 * user space sets max_entries to (highest possible CPU id + 1) times BS_BIN_SLOTS before load. Not
 * a PERCPU_ARRAY: that allocates each of its 65,536 entries from the per-CPU allocator, about 23 ms
 * of CPU at a run's start (bench/afxdp_startup.py); and mmapable, so that user space reads the bins
 * as memory, with no system call.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, BS_BIN_SLOTS);
	__type(key, __u32);
	__type(value, struct bs_bin);
} bins SEC(".maps");

/* CLOCK_REALTIME - CLOCK_MONOTONIC, ns, as user space last measured it (one entry). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bin_clock SEC(".maps");

/* The object is built twice (bpf/meson.build): with BS_NIC_TIMESTAMPS 1, whose NIC entry points ask
 * the driver for the frame's timestamp, and with 0, loaded whenever the NIC's timestamps are not
 * asked for. A kfunc is a typed kernel symbol, and for one libbpf reads the kernel's whole BTF at
 * every load (59-80 ms on the project's VM): only the object that calls it carries it. */
#ifndef BS_NIC_TIMESTAMPS
#define BS_NIC_TIMESTAMPS 1
#endif
#if BS_NIC_TIMESTAMPS
extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx, __u64 *timestamp) __ksym __weak;
#endif

/* The NIC's timestamp of the frame in ns, or 0 when it gives none (or this object does not ask). */
static __always_inline __u64 nic_timestamp(struct xdp_md *ctx)
{
#if BS_NIC_TIMESTAMPS
	__u64 ts = 0;

	if (bpf_xdp_metadata_rx_timestamp && bpf_xdp_metadata_rx_timestamp(ctx, &ts) == 0)
		return ts;
#endif
	return 0;
}

static __always_inline void count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &stat);

	if (v)
		*v += 1;
}

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

static __always_inline int is_ip(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u16 proto;
	__u32 off = sizeof(*eth);

	if ((void *)(eth + 1) > end)
		return 0;
	proto = eth->h_proto;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		struct vlan_hdr *v = data + off;

		if (proto != __builtin_bswap16(ETH_P_8021Q) &&
		    proto != __builtin_bswap16(ETH_P_8021AD))
			break;
		if ((void *)(v + 1) > end)
			return 0;
		proto = v->proto;
		off += sizeof(*v);
	}
	return proto == __builtin_bswap16(ETH_P_IP) || proto == __builtin_bswap16(ETH_P_IPV6);
}

/* Counts the frame into its 100 us bin on this CPU (a slot still holding an older bin starts anew)
 * and returns the frame's CLOCK_REALTIME reading of its bin, or 0 while user space has not set the
 * clock. */
static __always_inline __u64 count_bin(__u64 now, __u32 wire_len)
{
	__u32 key = 0;
	__u64 *offset = bpf_map_lookup_elem(&bin_clock, &key);
	__u64 rt, bin;
	struct bs_bin *b;

	if (!offset || !*offset)
		return 0;
	rt = now + *offset;
	bin = rt / BS_BIN_NS;
	key = bpf_get_smp_processor_id() * BS_BIN_SLOTS + ((__u32)bin & (BS_BIN_SLOTS - 1));
	b = bpf_map_lookup_elem(&bins, &key); /* only this CPU writes its ring */
	if (!b)
		return rt;
	if (b->bin != bin) {
		b->bin = bin;
		b->packets = 0;
		b->bytes = 0;
	}
	b->packets += 1;
	b->bytes += wire_len;
	return rt;
}

/* A frame bs_capture_head cannot put its metadata in front of: not redirected after all, so a drop
 * in the ledger (aborted: the redirect did not happen), and counted as without metadata. It was
 * counted into its bin already, as every frame the program would capture is. */
static __always_inline int drop_unmarked(void)
{
	count(BS_STAT_ABORTED);
	count(BS_STAT_NO_METADATA);
	return XDP_DROP;
}

/* in_frame: the metadata goes in front of the frame (bs_capture_head), not in the metadata area. */
static __always_inline int capture(struct xdp_md *ctx, int nic_ts, int in_frame)
{
	__u32 wire_len = ctx->data_end - ctx->data;
	__u64 now = bpf_ktime_get_ns(); /* the frame's arrival: its bin, and its timestamp without
					   the NIC's */
	__u64 ts = 0, rt = 0;
	__u32 flags = BS_META_MAGIC;
	struct bs_xdp_meta *meta;
	long act;

	if (cfg_ip_only && !is_ip(ctx)) {
		count(BS_STAT_FILTERED);
		return XDP_PASS;
	}
	if (cfg_bins)
		rt = count_bin(now, wire_len);
	act = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
	if (act == XDP_PASS) {
		count(BS_STAT_NO_SOCKET);
		return XDP_PASS;
	}
	if (act != XDP_REDIRECT) {
		count(BS_STAT_ABORTED);
		return XDP_ABORTED;
	}
	if (!in_frame)
		count(BS_STAT_REDIRECTED); /* in_frame: once its metadata is in front (below) */
	if (nic_ts && (ts = nic_timestamp(ctx)) != 0) {
		flags |= BS_META_NIC_TS;
		count(BS_STAT_NIC_TIMESTAMP);
	} else if (rt) {
		ts = rt;
		flags |= BS_META_REALTIME;
	} else {
		ts = now;
	}
	if (cfg_snaplen && wire_len > cfg_snaplen) {
		if (bpf_xdp_adjust_tail(ctx, (int)cfg_snaplen - (int)wire_len) == 0)
			count(BS_STAT_TRUNCATED);
	}
	if (in_frame) {
		/* Every frame this variant redirects carries the metadata in front (user space
		 * takes its first bytes for it): one without room for it (XDP gives every frame 256
		 * bytes of headroom, so never in practice) is dropped, not sent unmarked. */
		if (bpf_xdp_adjust_head(ctx, -(int)sizeof(*meta)) != 0)
			return drop_unmarked();
		meta = (void *)(long)ctx->data;
		if ((void *)(meta + 1) > (void *)(long)ctx->data_end)
			return drop_unmarked();
		count(BS_STAT_REDIRECTED);
	} else {
		if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*meta)) != 0) {
			count(BS_STAT_NO_METADATA);
			return (int)act;
		}
		meta = (void *)(long)ctx->data_meta;
		if ((void *)(meta + 1) > (void *)(long)ctx->data) {
			count(BS_STAT_NO_METADATA);
			return (int)act;
		}
	}
	meta->ts_ns = ts;
	meta->wire_len = wire_len;
	meta->flags = flags;
	return (int)act;
}

SEC("xdp")
int bs_capture(struct xdp_md *ctx) { return capture(ctx, 0, 0); }

SEC("xdp")
int bs_capture_nic(struct xdp_md *ctx) { return capture(ctx, 1, 0); }

SEC("xdp")
int bs_capture_head(struct xdp_md *ctx) { return capture(ctx, 0, 1); }

SEC("xdp")
int bs_capture_nic_head(struct xdp_md *ctx) { return capture(ctx, 1, 1); }

char LICENSE[] SEC("license") = "Dual BSD/GPL";
