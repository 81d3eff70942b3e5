#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""prom_api.py: the Prometheus HTTP API side of metrics_prometheus.sh.

  query BASE EXPR        print one line per series: {labels} value
  value BASE EXPR        print the single series' value (fails unless one)
  targets BASE           print "job instance health" per active target
  rules BASE             print "name health" per loaded rule
  families BASE          print every metric name Prometheus has
  dashboard BASE JSON    run every panel query of a Grafana dashboard
                         ($pool -> .*, $__rate_interval -> 30s); print
                         "series-count panel/refId", fail if one is empty
"""
import json
import sys
import urllib.parse
import urllib.request


def api(base, path, **params):
    url = f"{base}/api/v1/{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=20) as r:
        doc = json.load(r)
    if doc.get("status") != "success":
        raise SystemExit(f"{url}: {doc}")
    return doc["data"]


def query(base, expr):
    data = api(base, "query", query=expr)
    if data["resultType"] != "vector":
        raise SystemExit(f"{expr}: result type {data['resultType']}")
    return data["result"]


def labels(metric):
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(metric.items())) + "}"


def dashboard(base, path):
    with open(path) as f:
        dash = json.load(f)
    empty = []
    n = 0
    for panel in dash["panels"]:
        for t in panel.get("targets", []):
            expr = t["expr"].replace("$pool", ".*").replace("$__rate_interval", "30s")
            res = query(base, expr)
            n += 1
            print(f"{len(res)} {panel['title']}/{t['refId']}")
            if not res:
                empty.append(f"{panel['title']}/{t['refId']}: {expr}")
    if n == 0:
        raise SystemExit("no panel queries in the dashboard")
    if empty:
        raise SystemExit("queries with no series:\n  " + "\n  ".join(empty))


def main():
    cmd, base = sys.argv[1], sys.argv[2].rstrip("/")
    if cmd == "query":
        for s in query(base, sys.argv[3]):
            print(labels(s["metric"]), s["value"][1])
    elif cmd == "value":
        res = query(base, sys.argv[3])
        if len(res) != 1:
            raise SystemExit(f"{sys.argv[3]}: {len(res)} series, wanted one")
        print(res[0]["value"][1])
    elif cmd == "targets":
        for t in api(base, "targets")["activeTargets"]:
            print(t["labels"]["job"], t["labels"]["instance"], t["health"])
    elif cmd == "rules":
        for g in api(base, "rules")["groups"]:
            for r in g["rules"]:
                print(r["name"], r["health"], r.get("lastError", ""))
    elif cmd == "families":
        for name in api(base, "label/__name__/values"):
            print(name)
    elif cmd == "dashboard":
        dashboard(base, sys.argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
