// SPDX-License-Identifier: GPL-2.0
/*
 * The testbed's ERSPAN mirror: a tc program on the egress of the ERSPAN mirror veth that wraps
 * every mirrored frame as a switch's ERSPAN type II session would send it to a collector:
 *
 *   outer Ethernet | IPv4 (proto 47) | GRE (S bit, sequence, 0x88BE) | ERSPAN II | mirrored frame
 *
 * This kernel has no erspan/gretap links, hence a program. The frame is grown at the head by 50
 * bytes (bpf_skb_change_head) and the headers are written there; the mirrored frame is left
 * untouched.
 *
 * Sequence numbers: the program runs on whichever CPU mirrors the frame, and two CPUs can mirror at
 * once. One counter shared by both would be numbered in one order and delivered in another (a gap
 * and a reorder at the collector, which would read as mirror loss), so each CPU is its own ERSPAN
 * session (session id = CPU number) with its own per-CPU counter: within a session numbering and
 * delivery happen in the same order. The ERSPAN index is the ifindex of the bridge port the frame
 * came in on.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Outer addresses: the testbed sets these MACs on the mirror veth pair (switch side, collector
 * side). */
#define SWITCH_MAC 0x02, 0x77, 0xee, 0x00, 0x00, 0x01
#define COLLECTOR_MAC 0x02, 0x77, 0xee, 0x00, 0x00, 0x02
#define SWITCH_IP 0xc0000201	/* 192.0.2.1 */
#define COLLECTOR_IP 0xc0000202 /* 192.0.2.2 */
#define GRE_SEQ_BIT 0x1000
#define GRE_PROTO_ERSPAN 0x88be
#define ERSPAN_II_VERSION 1
#define ERSPAN_EN_TAGS_KEPT 3 /* "VLAN tag preserved": the frame goes out as it came in */

struct encap {
	__u8 dst[ETH_ALEN];
	__u8 src[ETH_ALEN];
	__be16 ethertype;
	/* IPv4, no options */
	__u8 ver_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8 ttl;
	__u8 protocol;
	__u16 check;
	__be32 saddr;
	__be32 daddr;
	/* GRE with the sequence number */
	__be16 gre_flags;
	__be16 gre_proto;
	__be32 gre_seq;
	/* ERSPAN type II */
	__be32 erspan_ver_vlan_cos_en_t_session;
	__be32 erspan_index;
} __attribute__((packed));

_Static_assert(sizeof(struct encap) == 50, "Ethernet 14 + IPv4 20 + GRE 8 + ERSPAN II 8");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gre_seq SEC(".maps");

static __always_inline __u16 ipv4_checksum(const struct encap *h)
{
	const __u16 *w = (const __u16 *)&h->ver_ihl;
	__u32 sum = 0;

#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

SEC("tc")
int erspan_encap(struct __sk_buff *skb)
{
	__u32 key = 0;
	__u32 *seq = bpf_map_lookup_elem(&gre_seq, &key);
	__u32 session = bpf_get_smp_processor_id() & 0x3ff;
	__u32 inner_len = skb->len;
	struct encap h = {
	    .dst = {COLLECTOR_MAC},
	    .src = {SWITCH_MAC},
	    .ethertype = bpf_htons(ETH_P_IP),
	    .ver_ihl = 0x45,
	    .ttl = 64,
	    .protocol = IPPROTO_GRE,
	    .saddr = bpf_htonl(SWITCH_IP),
	    .daddr = bpf_htonl(COLLECTOR_IP),
	    .gre_flags = bpf_htons(GRE_SEQ_BIT),
	    .gre_proto = bpf_htons(GRE_PROTO_ERSPAN),
	};

	if (!seq)
		return TC_ACT_SHOT;
	h.tot_len = bpf_htons(sizeof(h) - 14 + inner_len);
	h.id = bpf_htons((__u16)*seq);
	h.frag_off = bpf_htons(0x4000); /* DF */
	h.check = ipv4_checksum(&h);
	h.gre_seq = bpf_htonl(*seq);
	*seq += 1;
	h.erspan_ver_vlan_cos_en_t_session =
	    bpf_htonl((ERSPAN_II_VERSION << 28) | (ERSPAN_EN_TAGS_KEPT << 11) | session);
	h.erspan_index = bpf_htonl(skb->ingress_ifindex & 0xfffff);

	if (bpf_skb_change_head(skb, sizeof(h), 0))
		return TC_ACT_SHOT;
	if (bpf_skb_store_bytes(skb, 0, &h, sizeof(h), 0))
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
