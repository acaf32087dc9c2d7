#!/usr/bin/env python3
"""Writes the Grafana dashboards in this folder (one JSON file per view) from the definitions below.

Edit this file, run `python3 dashboards/generate.py`, commit both. The unit suite fails when the JSON files
differ from what this script writes, and tests/integration/prometheus_test.sh runs every panel's query
against a real Prometheus scraping burstscope. Conventions: a `datasource` variable (not ${DS_PROMETHEUS},
which breaks file provisioning), stable uids, a unit on every panel, $__rate_interval in every rate().
Standard library only.
"""
import json
import os
import sys

DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'sensor=~"$sensor", port=~"$port"'


def variables(extra=()):
    v = [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {}, "hide": 0, "refresh": 1, "options": []},
        query_var("sensor", "label_values(burstscope_build_info, sensor)"),
        query_var("port", 'label_values(burstscope_link_capacity_bytes_per_second{sensor=~"$sensor"}, port)'),
    ]
    return v + list(extra)


def query_var(name, query, multi=True):
    return {"name": name, "label": name, "type": "query", "datasource": DS, "definition": query,
            "query": {"query": query, "refId": name}, "refresh": 2, "includeAll": multi, "multi": multi,
            "allValue": ".*" if multi else None, "current": {}, "options": [], "hide": 0, "sort": 1}


class Board:
    def __init__(self, uid, title, description, extra_vars=()):
        self.uid, self.title, self.description = uid, title, description
        self.vars = variables(extra_vars)
        self.panels = []
        self.x = self.y = 0
        self.row_h = 0

    def panel(self, kind, title, unit, targets, w=12, h=8, description="", **opts):
        if self.x + w > 24:
            self.x, self.y = 0, self.y + self.row_h
            self.row_h = 0
        p = {"id": len(self.panels) + 1, "type": kind, "title": title, "description": description,
             "datasource": DS, "gridPos": {"x": self.x, "y": self.y, "w": w, "h": h},
             "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
             "targets": [dict(t, refId=chr(ord("A") + i), datasource=DS) for i, t in enumerate(targets)]}
        p.update(opts)
        self.panels.append(p)
        self.x += w
        self.row_h = max(self.row_h, h)

    def row(self, title):
        self.x, self.y = 0, self.y + self.row_h
        self.row_h = 0
        self.panels.append({"id": len(self.panels) + 1, "type": "row", "title": title, "collapsed": False,
                            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": []})
        self.y += 1

    def json(self):
        return {"uid": self.uid, "title": self.title, "description": self.description,
                "tags": ["burstscope"], "timezone": "utc", "schemaVersion": 37, "version": 1,
                "editable": True, "refresh": "10s", "time": {"from": "now-1h", "to": "now"},
                "graphTooltip": 1, "templating": {"list": self.vars}, "annotations": {"list": []},
                "links": [{"title": "burstscope", "type": "dashboards", "tags": ["burstscope"], "asDropdown": True}],
                "panels": self.panels}


def q(expr, legend="", instant=False, fmt=None):
    t = {"expr": expr, "legendFormat": legend}
    if instant:
        t["instant"], t["range"] = True, False
    if fmt:
        t["format"] = fmt
    return t


def overview():
    scale = query_var("scale", 'label_values(burstscope_envelope_bytes{sensor=~"$sensor"}, scale)', multi=False)
    b = Board("burstscope-overview", "burstscope / overview",
              "Bursts of ML-training traffic on mirrored links: rates, peak-to-mean per time scale, the envelope "
              "curve, utilisation of aligned windows, microbursts and virtual backlog.", [scale])
    b.row("Rates")
    b.panel("timeseries", "Throughput per report interval", "Bps",
            [q(f'burstscope_interval_throughput_bytes_per_second{{{SEL}}}', "{{sensor}} {{port}} {{direction}}")],
            description="Mean rate of each completed report interval (bytes/s on the wire).")
    b.panel("timeseries", "Packet rate", "pps",
            [q(f'sum by (sensor, port, direction) (rate(burstscope_packets_total{{{SEL}}}[$__rate_interval]))',
               "{{sensor}} {{port}} {{direction}}")])
    b.row("Burstiness")
    b.panel("timeseries", "Peak-to-mean ratio per time scale", "suffix:×",
            [q(f'burstscope_peak_to_mean_ratio{{{SEL}, direction="all"}}', "{{sensor}} {{port}} {{scale}} s")],
            description="E(τ) / (baseline mean rate × τ) for the last interval. 60 at 5 ms means the busiest 5 ms "
                        "carried 60 times the mean.")
    b.panel("barchart", "Envelope curve: E(τ) across time scales (last interval)", "decbytes",
            [q(f'max by (scale) (burstscope_envelope_bytes{{{SEL}, direction="all"}})', "{{scale}}", instant=True,
               fmt="table")],
            description="The burstiness curve of the paper: most bytes in any window of each length τ (seconds).",
            options={"xField": "scale", "orientation": "vertical"})
    b.panel("heatmap", "Utilisation of aligned $scale s windows", "percentunit",
            [q(f'sum by (le) (increase(burstscope_window_utilization_ratio_bucket{{{SEL}, direction="all", '
               f'scale="$scale"}}[$__rate_interval]))', "{{le}}", fmt="heatmap")],
            description="How many aligned windows of the chosen length ran at each share of link capacity.",
            options={"calculate": False, "yAxis": {"unit": "percentunit"}, "cellValues": {"unit": "short"}})
    b.panel("timeseries", "Envelope E(τ) per time scale", "decbytes",
            [q(f'burstscope_envelope_bytes{{{SEL}, direction="all"}}', "{{sensor}} {{port}} {{scale}} s")])
    b.row("Microbursts and backlog")
    b.panel("timeseries", "Microbursts per second", "cps",
            [q(f'sum by (sensor, port) (rate(burstscope_microbursts_total{{{SEL}, direction="all"}}[$__rate_interval]))',
               "{{sensor}} {{port}}")])
    b.panel("timeseries", "Microburst duration (p50, p99)", "s",
            [q(f'histogram_quantile(0.5, sum by (le) (rate(burstscope_microburst_duration_seconds_bucket{{{SEL}, '
               f'direction="all"}}[$__rate_interval])))', "p50"),
             q(f'histogram_quantile(0.99, sum by (le) (rate(burstscope_microburst_duration_seconds_bucket{{{SEL}, '
               f'direction="all"}}[$__rate_interval])))', "p99")])
    b.panel("timeseries", "Microburst size (p50, p99)", "decbytes",
            [q(f'histogram_quantile(0.5, sum by (le) (rate(burstscope_microburst_size_bytes_bucket{{{SEL}, '
               f'direction="all"}}[$__rate_interval])))', "p50"),
             q(f'histogram_quantile(0.99, sum by (le) (rate(burstscope_microburst_size_bytes_bucket{{{SEL}, '
               f'direction="all"}}[$__rate_interval])))', "p99")])
    b.panel("timeseries", "Virtual backlog per drain rate, and the switch buffer", "decbytes",
            [q(f'burstscope_virtual_backlog_max_bytes{{{SEL}, direction="all"}}', "{{sensor}} {{port}} @ {{rate_bps}} bit/s"),
             q(f'burstscope_switch_buffer_bytes{{{SEL}}}', "switch buffer {{sensor}} {{port}}")],
            description="Buffer a port draining at each rate would need for the last interval's traffic.")
    b.row("Per training job (every sensor)")
    b.panel("timeseries", "Traffic per training job", "Bps",
            [q('training_job:burstscope_bytes:rate1m', "{{training_job}}")],
            description="Recording rule summing every sensor and port labelled with the job (alerts/).")
    b.panel("timeseries", "Largest link backlog per training job", "decbytes",
            [q('training_job:burstscope_link_backlog_bytes:max', "{{training_job}}")])
    return b


def pairs_flows():
    b = Board("burstscope-pairs-flows", "burstscope / host pairs and flows",
              "Who talks to whom: the directed host-pair matrix (ring, tree, star or mesh) and the heaviest "
              "5-tuple flows. Only the configured top K are named; the rest is 'other'.")
    b.panel("table", "Host-pair matrix: bytes over the range", "decbytes",
            [q(f'sum by (src, dst) (increase(burstscope_pair_bytes_total{{{SEL}, src!="other"}}[$__range]))',
               instant=True, fmt="table")], w=12, h=10,
            transformations=[{"id": "groupingToMatrix", "options": {"columnField": "dst", "rowField": "src",
                                                                    "valueField": "Value"}}])
    b.panel("timeseries", "Top host pairs", "Bps",
            [q(f'topk(10, sum by (src, dst) (rate(burstscope_pair_bytes_total{{{SEL}, src!="other"}}[$__rate_interval])))',
               "{{src}} → {{dst}}")], w=12, h=10)
    b.panel("timeseries", "Top flows", "Bps",
            [q(f'topk(10, sum by (src, dst, src_port, dst_port, proto) '
               f'(rate(burstscope_flow_bytes_total{{{SEL}, src!="other"}}[$__rate_interval])))',
               "{{src}}:{{src_port}} → {{dst}}:{{dst_port}} ({{proto}})")], w=12, h=10)
    b.panel("timeseries", "Share of bytes outside the top K", "percentunit",
            [q(f'sum by (sensor, port) (rate(burstscope_pair_bytes_total{{{SEL}, src="other"}}[$__rate_interval])) '
               f'/ sum by (sensor, port) (rate(burstscope_pair_bytes_total{{{SEL}}}[$__rate_interval]))',
               "{{sensor}} {{port}}")], w=12, h=10,
            description="A large share means the top K misses much of the traffic: raise export.top-k.")
    b.panel("timeseries", "Flow-table evictions", "cps",
            [q(f'sum by (sensor, port, table) (rate(burstscope_flow_table_evictions_total{{{SEL}}}[$__rate_interval]))',
               "{{sensor}} {{port}} {{table}}")])
    b.panel("timeseries", "Table entries", "short",
            [q(f'burstscope_flow_table_entries{{{SEL}}}', "{{sensor}} {{port}} {{table}}")])
    return b


def capture_health():
    b = Board("burstscope-capture-health", "burstscope / capture health",
              "Is every frame accounted for? Drops by stage, the ledger, decode errors, mirror loss, timestamps.")
    b.panel("timeseries", "Drops by stage", "pps",
            [q(f'sum by (sensor, port, stage) (rate(burstscope_capture_dropped_packets_total{{{SEL}}}[$__rate_interval]))',
               "{{sensor}} {{port}} {{stage}}")])
    b.panel("timeseries", "Drop ratio (5 min)", "percentunit",
            [q(f'burstscope:capture_drop_ratio:rate5m{{{SEL}}}', "{{sensor}} {{port}}")],
            description="Frames lost before measurement over frames that reached the port; alert above 0.1%.")
    b.panel("table", "Ledger: received = analysed + dropped", "short",
            [q(f'sum by (sensor, port) (burstscope_capture_received_packets_total{{{SEL}}})', instant=True, fmt="table"),
             q(f'sum by (sensor, port) (burstscope_capture_analysed_packets_total{{{SEL}}})', instant=True, fmt="table"),
             q(f'sum by (sensor, port) (burstscope_capture_dropped_packets_total{{{SEL}}})', instant=True, fmt="table")],
            w=24, h=6, transformations=[{"id": "merge", "options": {}},
                                        {"id": "organize", "options": {"renameByName": {
                                            "Value #A": "received", "Value #B": "analysed", "Value #C": "dropped"}}}])
    b.panel("timeseries", "Decode errors by reason", "pps",
            [q(f'sum by (reason) (rate(burstscope_decode_errors_total{{{SEL}}}[$__rate_interval]))', "{{reason}}")],
            description="Frames measured at the layer that decoded; the reason says what was malformed.")
    b.panel("timeseries", "Mirror loss (ERSPAN/GRE sequence gaps)", "pps",
            [q(f'sum by (sensor, port) (rate(burstscope_mirror_sequence_gaps_total{{{SEL}}}[$__rate_interval]))',
               "{{sensor}} {{port}}")],
            description="Packets the mirror session lost before they reached burstscope.")
    b.panel("timeseries", "Late and reordered frames", "pps",
            [q(f'sum by (sensor, port) (rate(burstscope_capture_late_packets_total{{{SEL}}}[$__rate_interval]))',
               "late {{sensor}} {{port}}"),
             q(f'sum by (sensor, port) (rate(burstscope_capture_reordered_packets_total{{{SEL}}}[$__rate_interval]))',
               "reordered {{sensor}} {{port}}")])
    b.panel("table", "Timestamp source", "s",
            [q(f'max by (sensor, port, source) (burstscope_timestamp_info{{{SEL}}})', instant=True, fmt="table"),
             q(f'max by (sensor, port) (burstscope_timestamp_error_bound_seconds{{{SEL}}})', instant=True, fmt="table")],
            transformations=[{"id": "merge", "options": {}}])
    b.panel("timeseries", "Seconds since the last report interval closed", "s",
            [q(f'time() - burstscope_last_interval_close_time_seconds{{{SEL}}}', "{{sensor}} {{port}}")])
    b.panel("stat", "Sensors up", "short", [q('up{job="burstscope"}', "{{instance}}")],
            description="Prometheus's own scrape status of every burstscope target.")
    return b


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, board in [("overview", overview()), ("pairs-flows", pairs_flows()),
                        ("capture-health", capture_health())]:
        with open(os.path.join(out, f"burstscope-{name}.json"), "w") as f:
            json.dump(board.json(), f, indent=2, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()
