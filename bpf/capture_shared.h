/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the XDP capture program (capture.bpf.c) and burstscope's AF_XDP backend agree on: the
 * per-CPU verdict counters, the metadata the program writes in front of each redirected frame, and
 * the map size. Included by the BPF C and by C++; types from <linux/types.h> only, so both sides
 * see the same layout.
 */
#ifndef BURSTSCOPE_BPF_CAPTURE_SHARED_H
#define BURSTSCOPE_BPF_CAPTURE_SHARED_H

#include <linux/types.h>

/* XSKMAP entries: one AF_XDP socket per RX queue, indexed by the queue the frame arrived on. */
#define BS_MAX_QUEUES 256

/* Per-CPU counters, indexed by enum bs_stat. The first four are verdicts: every frame the program
 * sees is counted in exactly one of them, so their sum is the frames seen. The rest count
 * properties of frames already counted by a verdict. */
enum bs_stat {
	BS_STAT_REDIRECTED =
	    0, /* handed to the queue's AF_XDP socket (the kernel may still drop it there) */
	BS_STAT_NO_SOCKET, /* XDP_PASS: no socket bound on the frame's RX queue */
	BS_STAT_ABORTED,   /* XDP_ABORTED: the redirect helper failed (or XDP_DROP: bs_capture_head
			      had no room for the metadata) */
	BS_STAT_FILTERED,  /* XDP_PASS: excluded by the configured filter (not IP) */
	BS_STAT_TRUNCATED, /* redirected frames cut to the snap length (wire length kept in
			      metadata) */
	BS_STAT_NO_METADATA,   /* redirected without metadata: the driver has no room for it
				  (bs_capture_head: dropped instead and counted as aborted, never
				  sent unmarked) */
	BS_STAT_NIC_TIMESTAMP, /* metadata carries the NIC's RX timestamp */
	BS_STAT_COUNT,
};

/* Written by the program immediately before the frame: in the metadata area (data_meta .. data),
 * 4-byte multiple, <= 32 bytes; or, by bs_capture_head (kernels that refuse bpf_xdp_adjust_meta),
 * as the redirected frame's first bytes, the frame after it. */
struct bs_xdp_meta {
	__u64 ts_ns; /* BS_META_NIC_TS: the NIC's RX timestamp; BS_META_REALTIME: bpf_ktime_get_ns()
			plus bin_clock's offset (CLOCK_REALTIME, the reckoning of the frame's bin);
			else bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u32 wire_len; /* the frame's length before any truncation, bytes */
	__u32 flags;	/* BS_META_MAGIC | BS_META_NIC_TS */
};

/* 100 µs bins of every frame the program would capture (not the filtered ones), whatever becomes of
 * it later (SPEC "Overload"): per CPU, in a ring of BS_BIN_SLOTS slots indexed by bin number, which
 * user space drains as bins close. Bin k covers [k * BS_BIN_NS, (k + 1) * BS_BIN_NS) of
 * CLOCK_REALTIME as the program reckons it: bpf_ktime_get_ns() (CLOCK_MONOTONIC) plus the offset
 * user space keeps in the bin_clock map; the frame's timestamp in its metadata is that same reading
 * (BS_META_REALTIME), so a frame user space receives falls in the very bin the program counted it
 * in. A slot holds the newest bin that mapped to it: user space must read a bin within BS_BIN_SLOTS
 * bins (6.5 s) of its close. */
#define BS_BIN_NS 100000ULL
#define BS_BIN_SLOTS 65536u /* a power of two */
struct bs_bin {
	__u64 bin;     /* the bin's number: its start is bin * BS_BIN_NS, CLOCK_REALTIME */
	__u64 packets; /* frames the program saw in it, on this CPU */
	__u64 bytes;   /* their wire lengths (as the program saw them: before any cut) */
};

#define BS_META_MAGIC 0xb5700000u
#define BS_META_MAGIC_MASK 0xfff00000u
#define BS_META_NIC_TS 0x1u
#define BS_META_REALTIME 0x2u

#endif
