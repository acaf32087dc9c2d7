#!/usr/bin/env bash
# TAP checks of deploy/: the systemd unit passes systemd-analyze verify, the Prometheus and Alertmanager
# examples pass promtool/amtool, the Grafana provisioning and Kubernetes manifests are well-formed and say
# what the docs promise. usage: check_deploy.sh SOURCE_ROOT BURSTSCOPE
set -u
ROOT=$(cd "$1" && pwd) BS=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0 failed=0
check() {
  local what=$1
  shift
  n=$((n + 1))
  if "$@" >"$TMP/out" 2>&1; then echo "ok $n - $what"; else echo "not ok $n - $what"; sed 's/^/# /' "$TMP/out" | head -20; failed=$((failed + 1)); fi
}
# systemd-analyze needs the ExecStart binary to exist: point the unit at this build's.
for unit in burstscope burstscope-afxdp; do
  sed "s|/usr/local/bin/burstscope|$BS|" "$ROOT/deploy/systemd/$unit.service" >"$TMP/$unit.service"
  if command -v systemd-analyze >/dev/null; then
    check "systemd unit $unit.service: systemd-analyze verify is clean (no warning)" sh -c \
      "systemd-analyze verify '$TMP/$unit.service' >'$TMP/verify' 2>&1; rc=\$?; cat '$TMP/verify'; test \$rc = 0 && ! test -s '$TMP/verify'"
  else
    echo "# systemd-analyze is not installed: unit not verified"
  fi
done
check "AF_XDP unit: unprivileged user with exactly the AF_XDP capabilities" sh -c \
  "grep -q '^DynamicUser=yes' '$TMP/burstscope-afxdp.service' && grep -q '^CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_NET_ADMIN CAP_NET_RAW CAP_IPC_LOCK\$' '$TMP/burstscope-afxdp.service' && grep -q '^NoNewPrivileges=yes' '$TMP/burstscope-afxdp.service' && grep -q 'AF_XDP' '$TMP/burstscope-afxdp.service'"
check "systemd unit: hardened (NoNewPrivileges, capability bounding set, LimitMEMLOCK, ProtectSystem)" sh -c \
  "grep -q '^NoNewPrivileges=yes' '$TMP/burstscope.service' && grep -q '^CapabilityBoundingSet=CAP_IPC_LOCK' '$TMP/burstscope.service' && grep -q '^LimitMEMLOCK=infinity' '$TMP/burstscope.service' && grep -q '^ProtectSystem=strict' '$TMP/burstscope.service'"
for f in prometheus federation remote-write; do
  sed "s|/etc/prometheus/rules/burstscope.rules.yml|$ROOT/alerts/burstscope.rules.yml|" \
    "$ROOT/deploy/prometheus/$f.yml" >"$TMP/$f.yml"
  check "promtool check config deploy/prometheus/$f.yml" promtool check config "$TMP/$f.yml"
done
check "amtool check-config deploy/alertmanager/alertmanager.yml" amtool check-config "$ROOT/deploy/alertmanager/alertmanager.yml"
check "Grafana provisioning and Kubernetes manifests are well-formed and consistent" /usr/bin/python3 - "$ROOT" <<'PY'
import sys, yaml
root = sys.argv[1]
ds = yaml.safe_load(open(f"{root}/deploy/grafana/provisioning/datasources/burstscope.yml"))
assert ds["apiVersion"] == 1 and ds["datasources"][0]["type"] == "prometheus", ds
dash = yaml.safe_load(open(f"{root}/deploy/grafana/provisioning/dashboards/burstscope.yml"))
assert dash["providers"][0]["type"] == "file", dash
docs = list(yaml.safe_load_all(open(f"{root}/deploy/kubernetes/burstscope-dpdk.yaml")))
kinds = [d["kind"] for d in docs]
assert kinds == ["Namespace", "ConfigMap", "DaemonSet", "Service"], kinds
ds_ = docs[2]["spec"]["template"]["spec"]
c = ds_["containers"][0]
assert c["resources"]["limits"]["hugepages-1Gi"], "hugepages"
assert c["securityContext"]["capabilities"]["drop"] == ["ALL"], "drop all capabilities"
assert c["ports"][0]["containerPort"] == 19464
docs = list(yaml.safe_load_all(open(f"{root}/deploy/kubernetes/burstscope-afxdp.yaml")))
assert [d["kind"] for d in docs] == ["Namespace", "ConfigMap", "DaemonSet"], docs
spec = docs[2]["spec"]["template"]["spec"]
c = spec["containers"][0]
assert spec["hostNetwork"] is True
assert c["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["BPF", "PERFMON", "NET_ADMIN", "NET_RAW", "IPC_LOCK"]}
assert "hugepages-1Gi" not in c["resources"]["limits"]
assert any(v["hostPath"]["path"] == "/sys/fs/bpf" for v in spec["volumes"] if "hostPath" in v)
PY
/usr/bin/python3 -c "import yaml,sys; print(list(yaml.safe_load_all(open(sys.argv[1])))[1]['data']['burstscope.yaml'])" \
  "$ROOT/deploy/kubernetes/burstscope-dpdk.yaml" >"$TMP/k8s.yaml"
check "the Kubernetes ConfigMap's burstscope.yaml is a valid burstscope configuration" \
  "$BS" run --config "$TMP/k8s.yaml" --check-config
check "so is etc/burstscope.yaml" "$BS" run --config "$ROOT/etc/burstscope.yaml" --check-config
/usr/bin/python3 -c "import yaml,sys; print(list(yaml.safe_load_all(open(sys.argv[1])))[1]['data']['burstscope.yaml'])" \
  "$ROOT/deploy/kubernetes/burstscope-afxdp.yaml" >"$TMP/k8s-afxdp.yaml"
check "the AF_XDP ConfigMap's burstscope.yaml is a valid af_xdp configuration" sh -c \
  "'$BS' run --config '$TMP/k8s-afxdp.yaml' --check-config | grep -q 'configuration OK (af_xdp, 1 port'"
check "so is etc/burstscope-afxdp.yaml" sh -c \
  "'$BS' run --config '$ROOT/etc/burstscope-afxdp.yaml' --check-config | grep -q 'configuration OK (af_xdp, 1 port'"
printf 'export:\n  labels: {job: x}\n' >"$TMP/bad.yaml"
"$BS" run --config "$TMP/bad.yaml" --check-config >"$TMP/bad.out" 2>&1
bad_rc=$?
check "a bad configuration is refused with exit 2, naming the key" sh -c \
  "test $bad_rc = 2 && grep -q 'export.labels.job: reserved' '$TMP/bad.out'"
echo "1..$n"
[ "$failed" -eq 0 ]
