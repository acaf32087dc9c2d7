/* The baseline for `analyze`: the fastest a program can walk a capture file with libpcap, touching each
 * record's header and first byte and nothing else. usage: pcap_read_loop FILE -> "packets bytes seconds" */
#include <pcap/pcap.h>
#include <stdio.h>
#include <time.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pcap_read_loop FILE\n");
    return 2;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(argv[1], PCAP_TSTAMP_PRECISION_NANO, err);
  if (!p) {
    fprintf(stderr, "pcap_read_loop: %s\n", err);
    return 1;
  }
  struct pcap_pkthdr* h;
  const u_char* data;
  unsigned long long packets = 0, bytes = 0, sink = 0;
  while (pcap_next_ex(p, &h, &data) == 1) {
    ++packets;
    bytes += h->len;
    sink += h->caplen ? data[0] : 0;
  }
  pcap_close(p);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  printf("%llu %llu %.6f %llu\n", packets, bytes, s, sink & 1);
  return 0;
}
