#!/usr/bin/env python3
"""validate.py: offline validation of deploy/ (ctest runs it as deploy.validate).

Steps, each said as it runs; a tool that is not installed skips its own step and says so:
  1. yamllint -s of deploy/k8s (yamllint.yaml).
  2. kubectl kustomize of every overlay (kubectl is not a Debian 12 package of a recent
     enough version: without it the base's own files are checked instead, and the overlays'
     GPU checks are skipped).
  3. haproxy -c -f deploy/haproxy/haproxy.cfg.
  4. A schema check of every rendered document: the fields these manifests use, by kind,
     with their types (SCHEMA below, written from the Kubernetes API reference): an unknown
     field or a value of the wrong type is an error. It covers only what the manifests use;
     a field added to them must be added here.
  5. The contract between the manifests and opd (contract()): ports and probe paths against
     the ConfigMap's opd.json, every opd.json key one the daemon knows (config/opd.json
     holds them all) with its type, the grace period against the drain timeouts, one GPU
     for the GPU overlay, selectors that match the pods, no service-account token.
  6. A self-test: documents broken on purpose (an unknown field, a string for an integer, a
     readiness probe on the wrong path, a short grace period, two GPUs) must be rejected.
Exit status 0 when everything checked passed."""
import copy
import json
import os
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K8S = os.path.join(ROOT, "deploy", "k8s")
OVERLAYS = ("cpu", "gpu", "mig")

# ---- the schema of the fields used ----
# A schema is a type name ("str", "int", "bool", "quantity": a string or a number,
# "intstr": a port name or number, "any": not checked), a dict of field -> schema (an
# object: other fields are unknown), ["list", schema], or ["map", schema] (string keys).

STRMAP = ["map", "str"]
METADATA = {"name": "str", "namespace": "str", "labels": STRMAP, "annotations": STRMAP}
SELECTOR = {"matchLabels": STRMAP}
RESOURCES = {"requests": ["map", "quantity"], "limits": ["map", "quantity"]}
HTTP_GET = {"path": "str", "port": "intstr", "scheme": "str"}
PROBE = {"httpGet": HTTP_GET, "initialDelaySeconds": "int", "periodSeconds": "int",
         "timeoutSeconds": "int", "failureThreshold": "int", "successThreshold": "int"}
CONTAINER = {
    "name": "str", "image": "str", "command": ["list", "str"], "args": ["list", "str"],
    "ports": ["list", {"name": "str", "containerPort": "int", "protocol": "str"}],
    "startupProbe": PROBE, "readinessProbe": PROBE, "livenessProbe": PROBE,
    "lifecycle": {"preStop": {"sleep": {"seconds": "int"}}},
    "resources": RESOURCES,
    "securityContext": {"allowPrivilegeEscalation": "bool", "readOnlyRootFilesystem": "bool",
                        "capabilities": {"drop": ["list", "str"], "add": ["list", "str"]}},
    "volumeMounts": ["list", {"name": "str", "mountPath": "str", "readOnly": "bool"}],
}
POD_SPEC = {
    "serviceAccountName": "str", "automountServiceAccountToken": "bool",
    "terminationGracePeriodSeconds": "int",
    "securityContext": {"runAsNonRoot": "bool", "runAsUser": "int", "runAsGroup": "int",
                        "fsGroup": "int", "seccompProfile": {"type": "str"}},
    "containers": ["list", CONTAINER],
    "tolerations": ["list", {"key": "str", "operator": "str", "value": "str", "effect": "str"}],
    "nodeSelector": STRMAP,
    "volumes": ["list", {"name": "str", "configMap": {"name": "str"},
                         "emptyDir": {"medium": "str", "sizeLimit": "quantity"}}],
}
SERVICE_PORT = {"name": "str", "port": "int", "targetPort": "intstr", "protocol": "str"}
NP_PEER = {"namespaceSelector": SELECTOR, "podSelector": SELECTOR}
SCHEMA = {
    "ServiceAccount": {"automountServiceAccountToken": "bool"},
    "ConfigMap": {"data": STRMAP},
    "Deployment": {"spec": {
        "replicas": "int", "revisionHistoryLimit": "int", "selector": SELECTOR,
        "strategy": {"type": "str",
                     "rollingUpdate": {"maxSurge": "intstr", "maxUnavailable": "intstr"}},
        "template": {"metadata": METADATA, "spec": POD_SPEC}}},
    "Service": {"spec": {"type": "str", "clusterIP": "str", "publishNotReadyAddresses": "bool",
                         "selector": STRMAP, "ports": ["list", SERVICE_PORT],
                         "sessionAffinity": "str"}},
    "PodDisruptionBudget": {"spec": {"maxUnavailable": "intstr", "minAvailable": "intstr",
                                     "selector": SELECTOR}},
    "HorizontalPodAutoscaler": {"spec": {
        "scaleTargetRef": {"apiVersion": "str", "kind": "str", "name": "str"},
        "minReplicas": "int", "maxReplicas": "int",
        "metrics": ["list", {"type": "str", "pods": {
            "metric": {"name": "str"},
            "target": {"type": "str", "averageValue": "quantity"}}}],
        "behavior": {"scaleDown": {
            "stabilizationWindowSeconds": "int",
            "policies": ["list", {"type": "str", "value": "int", "periodSeconds": "int"}]}}}},
    "NetworkPolicy": {"spec": {
        "podSelector": SELECTOR, "policyTypes": ["list", "str"],
        "ingress": ["list", {"from": ["list", NP_PEER],
                             "ports": ["list", {"port": "intstr", "protocol": "str"}]}]}},
}
API_VERSIONS = {"ServiceAccount": "v1", "ConfigMap": "v1", "Service": "v1",
                "Deployment": "apps/v1", "PodDisruptionBudget": "policy/v1",
                "HorizontalPodAutoscaler": "autoscaling/v2",
                "NetworkPolicy": "networking.k8s.io/v1"}


def check_type(value, schema, where, errors):
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            errors.append(f"{where}: an object expected, got {type(value).__name__}")
            return
        for key, v in value.items():
            if key not in schema:
                errors.append(f"{where}.{key}: unknown field")
            else:
                check_type(v, schema[key], f"{where}.{key}", errors)
    elif isinstance(schema, list):
        kind, inner = schema
        if kind == "list" and not isinstance(value, list):
            errors.append(f"{where}: a list expected, got {type(value).__name__}")
        elif kind == "map" and not isinstance(value, dict):
            errors.append(f"{where}: a map expected, got {type(value).__name__}")
        else:
            items = enumerate(value) if kind == "list" else value.items()
            for k, v in items:
                check_type(v, inner, f"{where}[{k}]", errors)
    else:
        ok = {"str": lambda v: isinstance(v, str),
              "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "bool": lambda v: isinstance(v, bool),
              "quantity": lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool),
              "intstr": lambda v: isinstance(v, (str, int)) and not isinstance(v, bool),
              "any": lambda v: True}[schema](value)
        if not ok:
            errors.append(f"{where}: {schema} expected, got {value!r}")


def schema_errors(docs):
    errors = []
    for doc in docs:
        kind = doc.get("kind")
        where = f"{kind}/{doc.get('metadata', {}).get('name')}"
        if kind not in SCHEMA:
            errors.append(f"{where}: a kind these manifests do not use")
            continue
        if doc.get("apiVersion") != API_VERSIONS[kind]:
            errors.append(f"{where}: apiVersion {doc.get('apiVersion')!r}, "
                          f"expected {API_VERSIONS[kind]}")
        top = dict(SCHEMA[kind], apiVersion="str", kind="str", metadata=METADATA)
        check_type(doc, top, where, errors)
    return errors


# ---- the contract with opd ----

def port_of(url, scheme):
    if not isinstance(url, str) or not url.startswith(scheme + "://"):
        return None
    try:
        return int(url.rsplit(":", 1)[1].rstrip("/"))
    except ValueError:
        return None


def json_type(v):
    return "null" if v is None else type(v).__name__


def contract(docs, overlay, reference):
    """Errors of the rendered docs of one overlay (None: the base alone)."""
    errors = []
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d.get("kind"), []).append(d)
    for kind in ("ServiceAccount", "ConfigMap", "Deployment", "PodDisruptionBudget",
                 "HorizontalPodAutoscaler", "NetworkPolicy"):
        if len(by_kind.get(kind, [])) != 1:
            errors.append(f"one {kind} expected, found {len(by_kind.get(kind, []))}")
    services = by_kind.get("Service", [])
    if len(services) != 2:
        errors.append(f"two Services expected (headless and ClusterIP), found {len(services)}")
    if errors:
        return errors
    cm, dep = by_kind["ConfigMap"][0], by_kind["Deployment"][0]
    # opd.json: keys the daemon knows, with their types
    try:
        conf = json.loads(cm["data"]["opd.json"])
    except (KeyError, TypeError, ValueError) as e:
        return [f"ConfigMap: no readable opd.json ({e})"]
    for key, value in conf.items():
        if key not in reference:
            errors.append(f"opd.json: '{key}' is not an option of the daemon (config/opd.json)")
        elif reference[key] is not None and json_type(value) != json_type(reference[key]):
            errors.append(f"opd.json: '{key}' is {json_type(value)}, the daemon wants "
                          f"{json_type(reference[key])}")
    listen = conf.get("listen") or []
    rpc_ports = {port_of(u, "tcp") for u in listen} - {None}
    status_port = port_of(conf.get("status"), "http")
    if len(rpc_ports) != 1:
        errors.append(f"opd.json: one tcp:// listen address expected, found {listen}")
    if status_port is None:
        errors.append("opd.json: no http:// status address (the probes need it)")
    if any(not u.startswith("tcp://0.0.0.0:") for u in listen if u.startswith("tcp://")):
        errors.append("opd.json: the RPC listener must take the pod's address (tcp://0.0.0.0:)")
    rpc_port = next(iter(rpc_ports), None)
    # the pod
    pod = dep["spec"]["template"]
    spec = pod["spec"]
    labels = pod["metadata"].get("labels", {})
    containers = spec["containers"]
    if len(containers) != 1:
        errors.append(f"Deployment: one container expected, found {len(containers)}")
        return errors
    c = containers[0]
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    if ports.get("rpc") != rpc_port:
        errors.append(f"container port 'rpc' is {ports.get('rpc')}, opd listens on {rpc_port}")
    if ports.get("status") != status_port:
        errors.append(f"container port 'status' is {ports.get('status')}, opd's status "
                      f"endpoint is on {status_port}")
    for probe, path in (("readinessProbe", "/v1/ready"), ("livenessProbe", "/v1/health"),
                        ("startupProbe", "/v1/health")):
        get = (c.get(probe) or {}).get("httpGet") or {}
        port = get.get("port")
        port = ports.get(port) if isinstance(port, str) else port
        if get.get("path") != path or port != status_port:
            errors.append(f"{probe}: GET {get.get('path')} on port {port}, expected {path} on "
                          f"the status port {status_port}")
    if c.get("command", [])[:1] != ["/usr/local/bin/opd"] or "/etc/opd/opd.json" not in c.get(
            "command", []):
        errors.append("the container must run /usr/local/bin/opd --config /etc/opd/opd.json")
    mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    cm_volume = [n for n, v in volumes.items()
                 if (v.get("configMap") or {}).get("name") == cm["metadata"]["name"]]
    if not cm_volume or mounts.get(cm_volume[0]) != "/etc/opd":
        errors.append("the ConfigMap must be mounted at /etc/opd")
    pre_stop = (((c.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {}).get(
        "seconds", 0)
    if pre_stop < 5:
        errors.append(f"preStop sleep of {pre_stop} s: at least 5 s, so the endpoint leaves "
                      "the Services before the daemon stops taking sessions")
    drain_ms = max(conf.get("drain_timeout_ms", reference.get("drain_timeout_ms", 0)) or 0,
                   conf.get("session_drain_timeout_ms", 0) or 0)
    grace = spec.get("terminationGracePeriodSeconds", 30)
    if grace < pre_stop + drain_ms / 1000 + 30:
        errors.append(f"terminationGracePeriodSeconds {grace} must be above the preStop sleep "
                      f"({pre_stop} s) + the drain timeout ({drain_ms / 1000:g} s) + 30 s")
    if spec.get("automountServiceAccountToken") is not False:
        errors.append("the pod must not mount a service-account token")
    sa = by_kind["ServiceAccount"][0]
    if sa.get("automountServiceAccountToken") is not False or spec.get(
            "serviceAccountName") != sa["metadata"]["name"]:
        errors.append("the pod's ServiceAccount must be the one here, without a token")
    selector = dep["spec"]["selector"].get("matchLabels", {})
    if not selector or any(labels.get(k) != v for k, v in selector.items()):
        errors.append("the Deployment's selector does not match its pods' labels")

    def selects(sel):
        return bool(sel) and all(labels.get(k) == v for k, v in sel.items())

    # the Services
    headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
    if len(headless) != 1:
        errors.append("one headless Service (clusterIP: None) expected")
    for s in services:
        name = s["metadata"]["name"]
        if not selects(s["spec"].get("selector", {})):
            errors.append(f"Service {name}: its selector does not select the pods")
        if s["spec"].get("sessionAffinity", "None") != "None":
            errors.append(f"Service {name}: no sessionAffinity (ClientIP pins a client host)")
        for p in s["spec"].get("ports", []):
            target = p.get("targetPort", p.get("port"))
            target = ports.get(target) if isinstance(target, str) else target
            if p.get("name") != "rpc" or target != rpc_port:
                errors.append(f"Service {name}: port {p.get('name')} must be 'rpc' (the SRV "
                              f"name _rpc._tcp) and reach {rpc_port}")
    pdb = by_kind["PodDisruptionBudget"][0]
    if not selects(pdb["spec"].get("selector", {}).get("matchLabels", {})):
        errors.append("the PodDisruptionBudget does not select the pods")
    hpa = by_kind["HorizontalPodAutoscaler"][0]["spec"]
    ref = hpa.get("scaleTargetRef", {})
    if ref.get("kind") != "Deployment" or ref.get("name") != dep["metadata"]["name"]:
        errors.append("the HorizontalPodAutoscaler does not scale the Deployment")
    if hpa.get("minReplicas", 1) < 2:
        errors.append("the HorizontalPodAutoscaler keeps at least 2 daemons")
    if "replicas" in dep["spec"]:
        errors.append("the Deployment sets replicas, which the HorizontalPodAutoscaler owns")
    np_ = by_kind["NetworkPolicy"][0]["spec"]
    if not selects(np_.get("podSelector", {}).get("matchLabels", {})):
        errors.append("the NetworkPolicy does not select the pods")
    covered = {p.get("port") for rule in np_.get("ingress", []) for p in rule.get("ports", [])}
    for port in (rpc_port, status_port):
        if port not in covered:
            errors.append(f"the NetworkPolicy has no rule for port {port}")
    # devices
    limits = (c.get("resources") or {}).get("limits") or {}
    gpus = {k: v for k, v in limits.items() if k.startswith("nvidia.com/")}
    if overlay == "gpu" and gpus != {"nvidia.com/gpu": 1}:
        errors.append(f"the gpu overlay must ask exactly one GPU, asks {gpus}")
    if overlay == "mig" and (len(gpus) != 1 or not next(iter(gpus)).startswith(
            "nvidia.com/mig-") or next(iter(gpus.values())) != 1):
        errors.append(f"the mig overlay must ask exactly one MIG slice, asks {gpus}")
    if overlay in ("cpu", None) and gpus:
        errors.append(f"the {overlay or 'base'} asks for GPUs: {gpus}")
    if overlay in ("gpu", "mig"):
        rolling = dep["spec"].get("strategy", {}).get("rollingUpdate", {})
        if rolling.get("maxSurge") != 0:
            errors.append(f"the {overlay} overlay: maxSurge 0 (a draining pod keeps its GPU)")
    return errors


# ---- running the steps ----

def say(text):
    print(text, flush=True)


def render(overlay):
    out = subprocess.run(["kubectl", "kustomize", os.path.join(K8S, "overlays", overlay)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {overlay}: {out.stderr.strip()}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def base_documents():
    """The base as kustomize would give it, without kubectl: its resources, and the ConfigMap
    its generator makes (unhashed name), labels not applied."""
    with open(os.path.join(K8S, "base", "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    docs = []
    for name in k["resources"]:
        with open(os.path.join(K8S, "base", name)) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    for gen in k.get("configMapGenerator", []):
        data = {}
        for name in gen["files"]:
            with open(os.path.join(K8S, "base", name)) as f:
                data[os.path.basename(name)] = f.read()
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": gen["name"]},
                     "data": data})
    return docs


def self_test(docs, reference):
    """Breaks the rendered gpu overlay in each way the checks must catch: the failures."""
    def deployment(ds):
        return next(d for d in ds if d["kind"] == "Deployment")

    def container(ds):
        return deployment(ds)["spec"]["template"]["spec"]["containers"][0]

    cases = [
        ("an unknown field", lambda ds: container(ds).update(bogusField=1), "bogusField"),
        ("a string for an integer",
         lambda ds: container(ds)["readinessProbe"].update(periodSeconds="two"), "int expected"),
        ("readiness on /v1/health",
         lambda ds: container(ds)["readinessProbe"]["httpGet"].update(path="/v1/health"),
         "readinessProbe"),
        ("a grace period under the drain",
         lambda ds: deployment(ds)["spec"]["template"]["spec"].update(
             terminationGracePeriodSeconds=10), "terminationGracePeriodSeconds"),
        ("two GPUs", lambda ds: container(ds)["resources"]["limits"].update(
            {"nvidia.com/gpu": 2}), "exactly one GPU"),
        ("an option opd does not know",
         lambda ds: next(d for d in ds if d["kind"] == "ConfigMap")["data"].update(
             {"opd.json": '{"listen": ["tcp://0.0.0.0:7470"], "status": "http://0.0.0.0:7471",'
                          ' "drain_timeot_ms": 5}'}), "drain_timeot_ms"),
    ]
    failures = []
    for what, breaker, expect in cases:
        broken = copy.deepcopy(docs)
        breaker(broken)
        errors = schema_errors(broken) + contract(broken, "gpu", reference)
        if not any(expect in e for e in errors):
            failures.append(f"self-test: {what} was not rejected (errors: {errors})")
    return failures


def main():
    with open(os.path.join(ROOT, "config", "opd.json")) as f:
        reference = json.load(f)
    failed = []
    if shutil.which("yamllint"):
        say("1. yamllint -s deploy/k8s")
        r = subprocess.run(["yamllint", "-s", "-c", os.path.join(ROOT, "deploy", "yamllint.yaml"),
                            K8S], check=False)
        if r.returncode != 0:
            failed.append("yamllint")
    else:
        say("1. yamllint is not installed (Debian: yamllint): skipped")
    rendered = {}
    if shutil.which("kubectl"):
        say("2. kubectl kustomize overlays/" + ",".join(OVERLAYS))
        for o in OVERLAYS:
            try:
                rendered[o] = render(o)
            except RuntimeError as e:
                failed.append(str(e))
    else:
        say("2. kubectl is not installed: kubectl kustomize skipped; the base's files are "
            "checked as they are, and the overlays' GPU requests are not")
        rendered[None] = base_documents()
    if shutil.which("haproxy"):
        say("3. haproxy -c -f deploy/haproxy/haproxy.cfg")
        r = subprocess.run(["haproxy", "-c", "-f",
                            os.path.join(ROOT, "deploy", "haproxy", "haproxy.cfg")], check=False)
        if r.returncode != 0:
            failed.append("haproxy -c")
    else:
        say("3. haproxy is not installed (Debian: haproxy): haproxy -c skipped")
    say("4-5. schema of the fields used, and the contract with opd")
    for overlay, docs in rendered.items():
        for e in schema_errors(docs) + contract(docs, overlay, reference):
            failed.append(f"{overlay or 'base'}: {e}")
    if "gpu" in rendered:
        say("6. self-test: broken documents are rejected")
        failed += self_test(rendered["gpu"], reference)
    for f in failed:
        print("FAILED: " + f, file=sys.stderr)
    say("deploy/ validated" if not failed else f"{len(failed)} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
