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

    def panel(self, kind, title, unit, targets, w=12, h=8, description="", overrides=(), **opts):
        if self.x + w > 24:
            self.x, self.y = 0, self.y + self.row_h
            self.row_h = 0
        p = {"id": len(self.panels) + 1, "type": kind, "title": title, "description": description,
             "datasource": DS, "gridPos": {"x": self.x, "y": self.y, "w": w, "h": h},
             "fieldConfig": {"defaults": {"unit": unit}, "overrides": list(overrides)},
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
              "curve, utilisation of aligned windows, microbursts and virtual backlog, and the congestion evidence "
              "(ECN, TCP retransmissions, RoCEv2 CNPs, NAKs and resends, PFC pauses) next to the bursts.", [scale])
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
    # Congestion evidence (docs/evidence.md): the same width and time axis as the burst panels above, so a
    # point in time reads straight down from the bursts to what they did to the queues.
    b.row("Congestion evidence")
    b.panel("timeseries", "Congesting vs all microbursts per second", "cps",
            [q(f'sum by (sensor, port) (rate(burstscope_microbursts_total{{{SEL}, direction="all"}}[$__rate_interval]))',
               "all {{sensor}} {{port}}"),
             q(f'sum by (sensor, port) (rate(burstscope_congesting_microbursts_total{{{SEL}}}[$__rate_interval]))',
               "congesting {{sensor}} {{port}}")],
            description="Microbursts of the port, and those with congestion evidence (CE, CNP, NAK, go-back-N resend, "
                        "TCP retransmission, pause) inside them or within evidence.after (1 ms) after them. "
                        "BurstscopeCongestingMicrobursts fires above 1 congesting burst per second.")
    b.panel("timeseries", "ECN: ECT and CE packets per second", "pps",
            [q(f'sum by (sensor, port, codepoint) (rate(burstscope_ecn_packets_total{{{SEL}, direction="all"}}'
               f'[$__rate_interval]))', "{{codepoint}} {{sensor}} {{port}}")],
            description="IP packets with an ECN-capable codepoint (ect) and those a queue marked congestion experienced "
                        "(ce). CE without ECT means the senders do not negotiate ECN.")
    b.panel("timeseries", "TCP retransmission ratio", "percentunit",
            [q(f'sum by (sensor, port, direction) (rate(burstscope_tcp_retransmissions_total{{{SEL}}}[$__rate_interval])) '
               f'/ sum by (sensor, port, direction) (rate(burstscope_tcp_data_segments_total{{{SEL}}}[$__rate_interval]))',
               "{{sensor}} {{port}} {{direction}}")],
            description="Retransmitted TCP segments (Wireshark's rules) over segments with payload, per direction. "
                        "BurstscopeHighTcpRetransmissionRatio fires above 1% over 5 minutes (at 100 segments/s or more).")
    b.panel("timeseries", "RoCEv2 CNPs and NAKs by syndrome", "pps",
            [q(f'sum by (sensor, port) (rate(burstscope_roce_cnp_total{{{SEL}, direction="all"}}[$__rate_interval]))',
               "CNP {{sensor}} {{port}}"),
             q(f'sum by (sensor, port, syndrome) (rate(burstscope_roce_naks_total{{{SEL}, direction="all"}}'
               f'[$__rate_interval]))', "NAK {{syndrome}} {{sensor}} {{port}}")],
            description="CNPs: DCQCN telling senders to slow down. NAKs: psn_sequence_error (a packet went missing; "
                        "go-back-N follows), rnr (the receiver had no receive posted), other.")
    b.panel("timeseries", "RoCEv2 resent packets (go-back-N)", "pps",
            [q(f'sum by (sensor, port) (rate(burstscope_roce_resent_packets_total{{{SEL}, direction="all"}}'
               f'[$__rate_interval]))', "resent {{sensor}} {{port}}"),
             q(f'sum by (sensor, port) (rate(burstscope_roce_resent_packets_total{{{SEL}, direction="all"}}'
               f'[$__rate_interval])) / sum by (sensor, port) (rate(burstscope_roce_packets_total{{{SEL}, '
               f'direction="all"}}[$__rate_interval]))', "share {{sensor}} {{port}}")],
            description="Packets whose PSN was not after the highest seen on their queue pair (left) and their share "
                        "of the RoCEv2 packets (right). BurstscopeRoceGoBackNStorm fires above 0.1%.",
            overrides=[{"matcher": {"id": "byFrameRefID", "options": "B"},
                        "properties": [{"id": "unit", "value": "percentunit"},
                                       {"id": "custom.axisPlacement", "value": "right"}]}])
    b.panel("timeseries", "PFC paused fraction by priority", "percentunit",
            [q(f'sum by (sensor, port, priority) (rate(burstscope_pfc_paused_seconds_total{{{SEL}}}[$__rate_interval]))',
               "prio {{priority}} {{sensor}} {{port}}")],
            description="Share of the time each priority stood paused at the link's speed (priority all: 802.3x "
                        "PAUSE). No series until the port has seen a pause frame. BurstscopeHighPfcPauseFraction "
                        "fires above 5% over 5 minutes.")
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
    # SPEC "Overload" (docs/reliability.md): a drop must not lower the burst that caused it silently.
    b.panel("timeseries", "Degraded intervals: burst figures are bounds", "short",
            [q(f'sum by (sensor, port) (increase(burstscope_degraded_intervals_total{{{SEL}}}[$__rate_interval]))',
               "{{sensor}} {{port}}")],
            description="Report intervals whose windows reach a frame lost after the 100 us series: their E, PtM and "
                        "backlog are bounds (BurstscopeMeasurementDegraded).")
    b.panel("timeseries", "E(1 ms) of the last interval: analysed, and bounds when degraded", "bytes",
            [q(f'burstscope_envelope_bytes{{{SEL}, direction="all", scale="0.001"}}', "analysed {{sensor}} {{port}}"),
             q(f'burstscope_envelope_bound_bytes{{{SEL}, scale="0.001"}}', "{{bound}} bound {{sensor}} {{port}}")],
            description="In a degraded interval the analysed E(1 ms) is low; the truth lies between the bounds.")
    b.panel("timeseries", "Capture faults: link down, stalled RX queues", "short",
            [q(f'1 - burstscope_capture_link_up{{{SEL}}}', "link down {{sensor}} {{port}}"),
             q(f'sum by (sensor, port) (burstscope_capture_queue_stalled{{{SEL}}})', "stalled queues {{sensor}} {{port}}")],
            description="While the link is down or an RX queue is stalled, the port's figures miss that traffic "
                        "(BurstscopeCaptureLinkDown, BurstscopeCaptureQueueStalled; docs/live-capture.md).")
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
    # Mirror self-checks (docs/mirror.md): whether the mirror itself lies; each panel names the alert it feeds.
    b.row("Mirror self-checks")
    b.panel("timeseries", "Frames the mirror duplicated", "percentunit",
            [q(f'sum by (sensor, port) (rate(burstscope_mirror_duplicate_frames_total{{{SEL}, direction="all"}}'
               f'[$__rate_interval])) / sum by (sensor, port) (rate(burstscope_mirror_duplicate_checked_frames_total'
               f'{{{SEL}}}[$__rate_interval]))', "{{sensor}} {{port}}")],
            description="Copies of a frame seen again within the duplicate horizon (50 us by default) over the frames "
                        "checked: a frame mirrored at two places. BurstscopeMirrorDuplicating fires above 1% over "
                        "5 minutes.")
    b.panel("timeseries", "Frames the mirror lost", "pps",
            [q(f'sum by (sensor, port) (rate(burstscope_mirror_tcp_checks_total{{{SEL}, direction="all", '
               f'kind="hole_acked_unseen"}}[$__rate_interval]))', "TCP holes acked unseen {{sensor}} {{port}}"),
             q(f'sum by (sensor, port) (rate(burstscope_mirror_sequence_gaps_total{{{SEL}}}[$__rate_interval]))',
               "ERSPAN/GRE sequence gaps {{sensor}} {{port}}"),
             q(f'sum by (sensor, port) (rate(burstscope_mirror_tcp_checks_total{{{SEL}, direction="all", '
               f'kind="hole_refilled"}}[$__rate_interval]))', "TCP holes refilled (the network's) {{sensor}} {{port}}")],
            description="TCP data the receivers acknowledged that the mirror never showed, and ERSPAN sequence gaps: "
                        "the mirror's own loss (BurstscopeMirrorLosingFrames). Holes the senders refilled were lost "
                        "in the network, not by the mirror.")
    b.panel("timeseries", "Mirror port load: peak and overloaded windows", "percentunit",
            [q(f'max by (sensor, port, scale) (burstscope_mirror_peak_load_ratio{{{SEL}}})',
               "peak {{scale}} s {{sensor}} {{port}}"),
             q(f'sum by (sensor, port, scale) (rate(burstscope_mirror_overloaded_windows_total{{{SEL}}}'
               f'[$__rate_interval])) / sum by (sensor, port, scale) (rate(burstscope_mirror_load_windows_total'
               f'{{{SEL}}}[$__rate_interval]))', "overloaded share {{scale}} s {{sensor}} {{port}}")],
            w=24, description="The highest 100 us and 1 ms window load since the start (1 = the mirror port's line "
                              "rate, frames plus 24 bytes each), and the share of windows at 95% or more. "
                              "BurstscopeMirrorOverloaded fires when more than 1% of the 1 ms windows are.")
    # Flight recorder (docs/flight-recorder.md): the files it keeps of the worst bursts, when it is on.
    b.row("Flight recorder")
    b.panel("timeseries", "Flight recorder triggers", "short",
            [q(f'sum by (sensor, port, trigger, result) (increase(burstscope_flight_recorder_triggers_total{{{SEL}}}'
               f'[$__rate_interval]))', "{{trigger}} {{result}} {{sensor}} {{port}}")],
            description="Triggers (microburst, backlog, fan_in, on_demand) and what came of them: written (a pcapng "
                        "file), rate_limited, in_window (a file already holds it), failed "
                        "(BurstscopeFlightRecorderFailing).")
    b.panel("timeseries", "Flight recorder memory and disk", "s",
            [q(f'max by (sensor, port) (burstscope_flight_recorder_held_seconds{{{SEL}}})',
               "seconds held in memory {{sensor}} {{port}}")],
            description="The span of traffic the frame rings hold now: a file reaches back at most this far (set "
                        "flight-recorder.memory-bytes to hold more than flight-recorder.before). The files on disk: "
                        "burstscope_flight_recorder_files and _disk_bytes.")
    return b


# The exporter names each training job in a label `job` (job="job-10.77.0.1"). That is also the label every scrape
# adds (job="burstscope"), so Prometheus keeps the target's and stores the exporter's as ml_job (the
# default honor_labels: false, as in deploy/prometheus/prometheus.yml). Every training-job query uses this.
JOB = "ml_job"
JSEL = f'{SEL}, {JOB}=~"$job"'
DSEL = f'{SEL}, destination=~"$destination"'
JLEG = f"{{{{{JOB}}}}} {{{{sensor}}}} {{{{port}}}}"
DLEG = "{{destination}} {{sensor}} {{port}}"


def by_name(name, unit):
    return {"matcher": {"id": "byName", "options": name}, "properties": [{"id": "unit", "value": unit}]}


def training():
    job = dict(query_var("job", f'label_values(burstscope_job_info{{sensor=~"$sensor", port=~"$port"}}, {JOB})'),
               label="training job")
    dest = query_var("destination",
                     'label_values(burstscope_fanin_max_sources{sensor=~"$sensor", port=~"$port"}, destination)')
    scale = query_var("scale", 'label_values(burstscope_job_peak_to_mean_ratio{sensor=~"$sensor"}, scale)')
    b = Board("burstscope-training", "burstscope / training jobs",
              "Training jobs read from the mirrored traffic: topology, step period, duty cycle, bytes per step and "
              "per rank, each job's own burstiness, and fan-in: several sources bursting toward one host at once. "
              "Jobs are configured or inferred from who talks to whom; a silent job stays listed for 10 minutes "
              "(by default).",
              [job, dest, scale])
    b.row("Jobs")
    key = f"sensor, port, {JOB}"
    columns = [  # (query, column, unit)
        (f"max by ({key}, topology, configured) (burstscope_job_info{{{JSEL}}})", None, None),
        (f"max by ({key}) (burstscope_job_hosts{{{JSEL}}})", "hosts", "short"),
        (f"max by ({key}) (burstscope_job_data_edges{{{JSEL}}})", "data edges", "short"),
        (f"max by ({key}) (burstscope_job_top_flows_share_ratio{{{JSEL}}})", "top 5 flows", "percentunit"),
        (f"max by ({key}) (burstscope_job_step_period_seconds{{{JSEL}}})", "step period", "s"),
        (f"max by ({key}) (burstscope_job_step_period_quality{{{JSEL}}})", "period quality", "percentunit"),
        (f"max by ({key}) (burstscope_job_duty_cycle_ratio{{{JSEL}}})", "duty cycle", "percentunit"),
        (f"max by ({key}) (burstscope_job_step_bytes{{{JSEL}}})", "bytes/step", "decbytes"),
        (f"max by ({key}) (burstscope_job_step_bytes_spread_ratio{{{JSEL}}})", "bytes/step spread", "percentunit"),
        (f"max by ({key}) (burstscope_job_gradient_bytes{{{JSEL}}})", "gradients (ring)", "decbytes"),
        (f"sum by ({key}) (rate(burstscope_job_bytes_total{{{JSEL}}}[$__rate_interval]))", "throughput", "Bps"),
        (f"max by ({key}) (burstscope_job_idle_seconds{{{JSEL}}})", "idle", "s"),
    ]
    rename = {JOB: "job"}
    rename.update({f"Value #{chr(ord('A') + i)}": c for i, (_, c, _) in enumerate(columns) if c})
    b.panel("table", "Training jobs (now)", "short", [q(e, instant=True, fmt="table") for e, _, _ in columns],
            w=24, h=7,
            description="One row per job and mirrored port, merged from instant queries. Period, duty cycle and "
                        "bytes per step are empty while no step period is found; the gradient estimate is for ring "
                        "all-reduce jobs only (rank bytes per step × N / (2(N − 1)), wire bytes).",
            overrides=[by_name(c, u) for _, c, u in columns if c],
            transformations=[{"id": "merge", "options": {}},
                             {"id": "organize", "options": {"excludeByName": {"Time": True, "Value #A": True},
                                                            "renameByName": rename}}])
    b.panel("timeseries", "Step period", "s", [q(f"burstscope_job_step_period_seconds{{{JSEL}}}", JLEG)], w=8,
            description="Read from the job's traffic over the trailing training window; absent while none is found "
                        "(too few steps, aperiodic, a steady stream). BurstscopeJobStepSlowdown compares the last 5 "
                        "minutes with the 30 before.")
    b.panel("timeseries", "Duty cycle", "percentunit", [q(f"burstscope_job_duty_cycle_ratio{{{JSEL}}}", JLEG)], w=8,
            description="Share of the step period during which the job bursts.")
    b.panel("timeseries", "Bursting time per step (duty cycle × period)", "s",
            [q(f"burstscope_job_duty_cycle_ratio{{{JSEL}}} * burstscope_job_step_period_seconds{{{JSEL}}}", JLEG)],
            w=8,
            description="When the period grows and this stays, the extra time is spent away from the network "
                        "(compute, input pipeline, a slow rank); when this grows with it, communication takes longer.")
    b.panel("timeseries", "Bytes per step, and their spread", "decbytes",
            [q(f"burstscope_job_step_bytes{{{JSEL}}}", JLEG),
             q(f"burstscope_job_step_bytes_spread_ratio{{{JSEL}}}", f"spread {JLEG}")],
            description="Mean bytes per step over the window (left) and their standard deviation / mean (right). A "
                        "steady job moves the same bytes every step: a growing spread means uneven steps.",
            overrides=[{"matcher": {"id": "byFrameRefID", "options": "B"},
                        "properties": [{"id": "unit", "value": "percentunit"},
                                       {"id": "custom.axisPlacement", "value": "right"}]}])
    b.panel("timeseries", "Bytes per step sent by each rank", "decbytes",
            [q(f"burstscope_job_rank_step_bytes{{{JSEL}}}", f"{{{{{JOB}}}}} {{{{host}}}} ({{{{role}}}})")],
            description="Every rank of a ring sends about the same; a parameter server's servers and workers "
                        "differ by design.")
    b.panel("timeseries", "Phases per step, and the idle (compute) share of the step", "short",
            [q(f"burstscope_job_step_phases{{{JSEL}}}", f"phases {JLEG}"),
             q(f"burstscope_job_step_idle_ratio{{{JSEL}}}", f"idle {JLEG}")], w=24,
            description="Collective phases (burst groups) in the typical step (left), and the share of the step "
                        "outside every phase (right): compute the network does not hide, a pipeline's bubble. "
                        "Plain data parallel shows one or a few phases; sharded, pipeline and expert-parallel jobs "
                        "many (docs/training.md \"Phases of a step\"). The kind, stages and groups: the jobs table "
                        "(topology) and burstscope_job_rank_stage.",
            overrides=[{"matcher": {"id": "byFrameRefID", "options": "B"},
                        "properties": [{"id": "unit", "value": "percentunit"},
                                       {"id": "custom.axisPlacement", "value": "right"}]}])
    b.row("Traffic and burstiness per job")
    b.panel("timeseries", "Throughput per job", "Bps",
            [q(f"sum by ({key}) (rate(burstscope_job_bytes_total{{{JSEL}}}[$__rate_interval]))", JLEG)],
            description="Bytes between the job's hosts.")
    b.panel("timeseries", "Peak-to-mean ratio per time scale", "suffix:×",
            [q(f'burstscope_job_peak_to_mean_ratio{{{JSEL}, scale=~"$scale"}}', f"{{{{{JOB}}}}} {{{{scale}}}} s")],
            description="The job's own E(τ) / (its mean rate over the training window × τ), from 100 µs bins.")
    b.panel("timeseries", "Backlog of the job alone, per drain rate", "decbytes",
            [q(f"burstscope_job_virtual_backlog_max_bytes{{{JSEL}}}", f"{{{{{JOB}}}}} @ {{{{rate_bps}}}} bit/s")],
            description="Buffer a port draining at each rate would need for this job's traffic alone, last interval.")
    b.panel("timeseries", "Time since the job's last packet", "s",
            [q(f"burstscope_job_idle_seconds{{{JSEL}}}", JLEG)],
            description="Near 0 while the job runs. BurstscopeJobSilent fires above 60 s; the sensor forgets a job "
                        "10 minutes after its last packet.")
    b.row("Fan-in toward destinations")
    b.panel("timeseries", "Most sources bursting at once toward a destination", "short",
            [q(f"max_over_time(burstscope_fanin_max_sources{{{DSEL}}}[$__rate_interval])", DLEG)], w=8,
            description="Most sources sending toward the host at the co-burst threshold (by default 10% of its "
                        "link rate) within one 100 µs bin, over the report intervals of each point. 1 in a ring; "
                        "more is incast.")
    b.panel("timeseries", "Co-bursts: bins with two or more sources bursting", "cps",
            [q(f"sum by (sensor, port, destination) (rate(burstscope_fanin_cobursts_total{{{DSEL}}}"
               f"[$__rate_interval]))", DLEG)], w=8,
            description="100 µs bins per second in which two or more sources burst toward the host: 100/s is 1% "
                        "of the time.")
    b.panel("timeseries", "Cross-job co-bursts", "cps",
            [q(f"sum by (sensor, port, destination) (rate(burstscope_fanin_cross_job_cobursts_total{{{DSEL}}}"
               f"[$__rate_interval]))", DLEG)], w=8,
            description="Co-burst bins whose sources belong to two or more jobs: jobs that collide at a shared "
                        "host; staggering their steps helps.")
    b.panel("timeseries", "Backlog toward each destination, and the buffer", "decbytes",
            [q(f"max_over_time(burstscope_fanin_backlog_max_bytes{{{DSEL}}}[$__rate_interval])", DLEG),
             q(f"burstscope_switch_buffer_bytes{{{SEL}}}", "switch buffer {{sensor}} {{port}}")],
            description="Largest virtual backlog of the host's switch port (draining at the host's link rate) in a "
                        "report interval. The receiver buffer it is counted against is training.receiver-buffer-bytes, "
                        "by default the switch buffer drawn here; the host's link rate is the mirrored link's unless "
                        "training.host-link-gbps sets it.")
    b.panel("timeseries", "Time over the receiver buffer", "cps",
            [q(f"sum by (sensor, port, destination) (rate(burstscope_fanin_backlog_over_buffer_bins_total{{{DSEL}}}"
               f"[$__rate_interval]))", DLEG)],
            description="100 µs bins per second that ended with the backlog toward the host above the receiver "
                        "buffer: the switch would drop or pause then. Stays 0 without a buffer configured.")
    b.panel("heatmap", "Bursting sources per 100 µs bin", "short",
            [q(f"sum by (le) (increase(burstscope_fanin_bursting_sources_bucket{{{DSEL}}}[$__rate_interval]))",
               "{{le}}", fmt="heatmap")],
            description="How many bins (with any source bursting) had 1, 2, 3, ... sources bursting toward the "
                        "selected destinations at once.",
            options={"calculate": False, "yAxis": {"unit": "short"}, "cellValues": {"unit": "short"}})
    b.panel("bargauge", "Bursting sources per bin, over the time range", "short",
            [q(f"sum by (le) (increase(burstscope_fanin_bursting_sources_bucket{{{DSEL}}}[$__range]))", "{{le}}",
               instant=True, fmt="heatmap")],
            description="Bins by the number of sources bursting at once (up to the bucket's bound).",
            options={"orientation": "horizontal", "displayMode": "gradient",
                     "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}})
    b.row("Training analysis")
    b.panel("stat", "Jobs reported", "short", [q(f"burstscope_training_jobs{{{SEL}}}", "{{sensor}} {{port}}")], w=4)
    b.panel("stat", "Training window", "s", [q(f"burstscope_training_window_seconds{{{SEL}}}", "{{sensor}} {{port}}")],
            w=4, description="Trailing time jobs, periods, bytes per step and topology are read from.")
    b.panel("timeseries", "Training analysis time", "s",
            [q(f"burstscope_training_analysis_seconds{{{SEL}}}", "{{sensor}} {{port}}")], w=6,
            description="On the control thread. training.analysis-budget (default 0.1) keeps the analyses within "
                        "that share of a core: a longer one is followed by intervals taken in without one.")
    b.panel("timeseries", "Intervals per analysis", "short",
            [q(f"burstscope_training_analysis_intervals{{{SEL}}}", "{{sensor}} {{port}}")], w=4,
            description="Report intervals the last analysis took in: 1 while every interval is analysed; more "
                        "while analyses are spaced out by training.analysis-budget (the job figures are as "
                        "old as that many intervals at most) or the control thread is behind.")
    b.panel("timeseries", "Packets outside the training flow table", "pps",
            [q(f"sum by (sensor, port) (rate(burstscope_training_untracked_packets_total{{{SEL}}}[$__rate_interval]))",
               "{{sensor}} {{port}}")], w=6,
            description="IP packets of flows beyond the training flow table (training.max-flows per port): in no "
                        "job's figures.")
    return b


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, board in [("overview", overview()), ("pairs-flows", pairs_flows()),
                        ("capture-health", capture_health()), ("training", training())]:
        with open(os.path.join(out, f"burstscope-{name}.json"), "w") as f:
            json.dump(board.json(), f, indent=2, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()
