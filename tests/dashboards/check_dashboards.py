#!/usr/bin/env python3
"""TAP checks of the Grafana dashboards: the committed JSON is what dashboards/generate.py writes, and every
dashboard follows the conventions file provisioning and operators rely on."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tap import check, done  # noqa: E402

root = sys.argv[1]


files = sorted(glob.glob(os.path.join(root, "dashboards", "*.json")))
check(len(files) == 4, "four dashboards: overview, pairs/flows, capture health, training jobs")
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, os.path.join(root, "dashboards", "generate.py"), tmp], check=True)
    for f in files:
        with open(f) as a, open(os.path.join(tmp, os.path.basename(f))) as b:
            check(a.read() == b.read(), f"{os.path.basename(f)} is up to date with generate.py")
uids = set()
for f in files:
    d = json.load(open(f))
    name = os.path.basename(f)
    text = open(f).read()
    uids.add(d["uid"])
    check(re.fullmatch(r"burstscope-[a-z-]+", d["uid"]) is not None, f"{name}: stable uid {d['uid']}")
    names = [v["name"] for v in d["templating"]["list"]]
    check(names[0] == "datasource" and d["templating"]["list"][0]["type"] == "datasource",
          f"{name}: a datasource template variable first")
    check("DS_PROMETHEUS" not in text, f"{name}: no ${{DS_PROMETHEUS}} (breaks file provisioning)")
    panels = [p for p in d["panels"] if p["type"] != "row"]
    check(all(p["fieldConfig"]["defaults"].get("unit") for p in panels), f"{name}: a unit on every panel")
    check(all(p["datasource"]["uid"] == "${datasource}" and all(t["datasource"]["uid"] == "${datasource}"
                                                               for t in p["targets"]) for p in panels),
          f"{name}: every panel and query uses the datasource variable")
    exprs = [t["expr"] for p in panels for t in p["targets"]]
    ranges = [m for e in exprs for m in re.findall(r"\[([^\]]+)\]", e)]
    check(all(r in ("$__rate_interval", "$__range") for r in ranges),
          f"{name}: range selectors use $__rate_interval (or $__range for totals over the view)")
    check(all(re.search(r"\brate\([^)]*\[\$__rate_interval\]", e) or "rate(" not in e for e in exprs),
          f"{name}: every rate() over $__rate_interval")
    used = {v for e in exprs + [v.get("definition", "") for v in d["templating"]["list"]]
            for v in re.findall(r"\$(\w+)", e) if not v.startswith("__")}
    check(used <= set(names), f"{name}: every $variable in a query is defined ({sorted(used - set(names))} not)")
    check(all(any(x["id"] == "merge" for x in p.get("transformations", [])) for p in panels
              if p["type"] == "table" and len(p["targets"]) > 1),
          f"{name}: a table of several queries merges them into one")
    # The exporter's per-job label `job` collides with the scrape's job="burstscope": Prometheus stores it as
    # ml_job (honor_labels: false), so a query or legend on `job` would lump every training job together.
    training = [t for p in panels for t in p["targets"] if "burstscope_job_" in t["expr"]]
    training += [{"expr": v["definition"], "legendFormat": ""} for v in d["templating"]["list"]
                 if "burstscope_job_" in v.get("definition", "")]
    check(all(not re.search(r"\bjob\s*(=~|!~|!=|=)|\b(by|without)\s*\([^)]*\bjob\b|,\s*job\s*\)", t["expr"])
              and "{{job}}" not in t["legendFormat"] for t in training),
          f"{name}: training-job queries use ml_job, never the scrape's job label")
check(len(uids) == len(files), "uids are unique")
done()
