#!/usr/bin/env python3
"""PyTorch's own operator suite (op_db, torch.testing._internal.common_methods_invocations)
run through opd.torch.remote against a daemon this tool starts: every OpInfo's first samples
(float32, and float64 and int64 where the OpInfo has them; --dtypes float32 for float32 alone)
run eagerly and with every tensor an OpdTensor, the results and the sample's own tensors after
the call compared.

    PYTHONPATH=build/python OPD_DAEMON=build/server/opd \\
        python3 client/python/tests/opinfo_run.py --mode default --json out.json

A sample passes when it matches eager (torch.testing.assert_close's defaults, NaNs equal, or a
float result whose error against a float64 eager reference is at most twice eager float32's
own), or raises an exception (an operator the daemon lacks, something the bridge does not
support): both are honest. A result that differs is WRONG, and the tool exits with status 1;
so is an OpdTensor result whose geometry here is not the daemon's (read through
aten::as_strided with it, its elements differ), which views made later would trust.
Values PyTorch leaves unspecified are compared as far as they are specified (UNSPECIFIED).
An operator is counted as "all" (every sample passes), "some", "none" (every sample raised)
or "wrong"; --verbose prints each operator's line, --json writes everything.

The tool stops by itself: past --deadline seconds it runs no further OpInfo and says
UNFINISHED (which fails nothing by itself); faulthandler ends a process hung 30 s past it."""
import argparse
import faulthandler
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))

# Operators whose results PyTorch leaves (partly) unspecified: what is compared instead.
SHAPES_ONLY = "shapes and dtypes only"
UNSPECIFIED = {
    **{n: ("uninitialised memory", SHAPES_ONLY) for n in (
        "empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided")},
    **{n: ("a random operator", SHAPES_ONLY) for n in (
        "uniform", "randn", "randn_like", "rand_like", "randint_like", "multinomial",
        "normal", "normal.number_mean", "bernoulli", "nn.functional.dropout",
        "nn.functional.dropout2d", "nn.functional.dropout3d",
        "nn.functional.feature_alpha_dropout.with_train", "nn.functional.rrelu",
        "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
        "svd_lowrank", "pca_lowrank", "nn.functional.alpha_dropout", "cauchy", "exponential",
        "geometric", "log_normal")},
    **{n: ("the signs of singular and eigenvectors", SHAPES_ONLY) for n in (
        "svd", "linalg.svd", "linalg.eigh", "symeig", "linalg.eig")},
    **{n: ("which index wins a tie", "values") for n in (
        "max.reduction_with_dim", "min.reduction_with_dim", "mode", "kthvalue", "topk",
        "sort", "argsort", "median", "nanmedian", "msort", "cummax", "cummin")},
    "unique": ("the order of unique(sorted=False)", "sorted"),
    "resize_": ("the elements resize_ adds", SHAPES_ONLY),
    "resize_as_": ("the elements resize_as_ adds", SHAPES_ONLY),
}
DTYPES = ("float32", "float64", "int64")


def start_daemon(exe):
    """An opd on a Unix socket in a temporary directory: (process, url, directory)."""
    tmp = tempfile.TemporaryDirectory(prefix="opd-opinfo-")
    url = f"unix://{tmp.name}/opd.sock"
    log_path = os.path.join(tmp.name, "opd.log")
    log = open(log_path, "w")
    proc = subprocess.Popen([exe, "--listen", url, "--admin", "", "--status", "http://127.0.0.1:0",
                             "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=log)
    log.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with open(log_path) as f:
            if " ready" in f.read():
                return proc, url, tmp
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    with open(log_path) as f:
        raise SystemExit(f"opd did not start: {f.read()}")


def stop_daemon(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


class Runner:
    def __init__(self, torch, opd, client, fallback):
        self.torch, self.opd, self.client, self.fallback = torch, opd, client, fallback
        from torch.utils._pytree import tree_map
        self.tree_map = tree_map

    # ---- the values of a call ----

    def leaves(self, x, out):
        """Tensors and other values of a (nested) result, in order."""
        if isinstance(x, (list, tuple)):
            for v in x:
                self.leaves(v, out)
        elif isinstance(x, dict):
            for k in sorted(x, key=str):
                self.leaves(x[k], out)
        else:
            out.append(x)
        return out

    def local(self, x):
        t = self.torch
        return self.tree_map(lambda v: v.cpu() if isinstance(v, self.opd.torch.OpdTensor)
                             else v.clone() if isinstance(v, t.Tensor) else v, x)

    def sample_tensors(self, inp, args, kwargs):
        return [v for v in self.leaves((inp, args, kwargs), []) if isinstance(v, self.torch.Tensor)]

    def float64(self, x):
        t = self.torch
        return self.tree_map(lambda v: v.detach().clone().to(t.float64)
                             if isinstance(v, t.Tensor) and v.dtype == t.float32
                             else v.detach().clone() if isinstance(v, t.Tensor) else v, x)

    # ---- comparison ----

    def close(self, got, exp, ref, rule):
        """None when got matches exp (ref: the float64 result, or None), else why not."""
        t = self.torch
        if isinstance(exp, t.Tensor) or isinstance(got, t.Tensor):
            if not (isinstance(exp, t.Tensor) and isinstance(got, t.Tensor)):
                return f"a {type(got).__name__} where eager gives a {type(exp).__name__}"
            if got.shape != exp.shape or got.dtype != exp.dtype:
                return f"{tuple(got.shape)} {got.dtype} where eager gives " \
                       f"{tuple(exp.shape)} {exp.dtype}"
            if rule == SHAPES_ONLY or (rule == "values" and not exp.is_floating_point()):
                return None
            if rule == "sorted" and exp.dim() >= 1:
                got, exp = got.flatten().sort()[0], exp.flatten().sort()[0]
            try:
                t.testing.assert_close(got, exp, equal_nan=True)
                return None
            except AssertionError as e:
                why = str(e).strip().splitlines()[0]
            if isinstance(ref, t.Tensor) and exp.dtype == t.float32 and ref.shape == exp.shape:
                finite = t.isfinite(ref)
                if t.equal(finite, t.isfinite(got)) and t.equal(finite, t.isfinite(exp)) and \
                        t.equal(got[~finite].isnan(), exp[~finite].isnan()) and \
                        t.equal(got[~finite].nan_to_num(), exp[~finite].nan_to_num()):
                    err_got = (got.double() - ref)[finite].abs()
                    err_exp = (exp.double() - ref)[finite].abs()
                    if not err_got.numel() or err_got.max() <= 2 * err_exp.max():
                        return None
            return why
        if rule == SHAPES_ONLY:
            return None
        if isinstance(exp, float) and isinstance(got, float):
            if (math.isnan(exp) and math.isnan(got)) or math.isclose(got, exp, rel_tol=1.3e-6,
                                                                       abs_tol=1e-5):
                return None
        elif got == exp:
            return None
        return f"{got!r} where eager gives {exp!r}"

    def compare(self, got, exp, ref, rule):
        g, e = self.leaves(got, []), self.leaves(exp, [])
        r = self.leaves(ref, []) if ref is not None else [None] * len(e)
        if len(g) != len(e) or len(r) != len(e):
            return f"{len(g)} values where eager gives {len(e)}"
        for i, (a, b, c) in enumerate(zip(g, e, r)):
            why = self.close(a, b, c, rule)
            if why is not None:
                return f"value {i}: {why}"
        return None

    def layout_mismatch(self, got):
        """Why an OpdTensor result's geometry here (sizes, strides, offset) is not the daemon's,
        or None: its elements read through aten::as_strided with that geometry must be its
        values (views made later trust that geometry)."""
        torch, opd = self.torch, self.opd
        for v in self.leaves(got, []):
            if isinstance(v, opd.torch.OpdTensor) and v.numel() and \
                    self.client.schema("aten::as_strided") is not None:
                via = torch.ops.aten.as_strided.default(v, v.shape, v.stride(),
                                                        v.storage_offset())
                if not torch.equal(via.cpu().nan_to_num(), v.cpu().nan_to_num()):
                    return f"the daemon's layout of a {tuple(v.shape)} result is not " \
                           f"{v.stride()} here"
        return None

    # ---- one sample ----

    def run(self, fn, sample, rule):
        """("pass" | "wrong" | "error" | "skip", detail)."""
        opd = self.opd
        inp, args, kwargs = sample.input, tuple(sample.args), dict(sample.kwargs)
        pristine = self.float64((inp, args, kwargs)) if rule is None else None
        try:
            remote = opd.torch.remote((inp, args, kwargs), self.client)
        except opd.ConnectionLost:
            raise
        except Exception as e:  # noqa: BLE001 (a tensor the bridge cannot hold)
            return "error", f"remote(): {type(e).__name__}: {str(e)[:200]}"
        try:
            expected = fn(inp, *args, **kwargs)
        except Exception:  # PyTorch itself refuses the sample
            return "skip", "eager raised"
        expected_after = [v.clone() for v in self.sample_tensors(inp, args, kwargs)]
        rinp, rargs, rkwargs = remote
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.fallback:
                    with opd.torch.cpu_fallback():
                        got = fn(rinp, *rargs, **rkwargs)
                else:
                    got = fn(rinp, *rargs, **rkwargs)
                layout = self.layout_mismatch(got)
                got = self.local(got)
                got_after = [v.cpu() if isinstance(v, opd.torch.OpdTensor) else v
                             for v in self.sample_tensors(rinp, rargs, rkwargs)]
        except opd.ConnectionLost:
            raise
        except Exception as e:  # noqa: BLE001 (any exception is an honest answer)
            return "error", f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}" \
                if str(e).strip() else type(e).__name__
        if layout is not None:
            return "wrong", layout
        ref = None
        why = self.compare(got, expected, None, rule or "")
        if why is not None and pristine is not None:
            try:
                ref = fn(pristine[0], *pristine[1], **pristine[2])
            except Exception:  # noqa: BLE001 (no float64 reference)
                ref = None
            if ref is not None:
                why = self.compare(got, expected, ref, "")
        if why is None:
            why = self.compare(got_after, expected_after, None,
                               rule if rule == SHAPES_ONLY else "")
            if why is not None:
                why = "the sample's tensors after the call: " + why
        return ("pass", "") if why is None else ("wrong", why)


def opinfo_name(o):
    return o.name + ("." + o.variant_test_name if o.variant_test_name else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("default", "fallback"), default="default",
                    help="fallback: inside opd.torch.cpu_fallback()")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--samples", type=int, default=8, help="samples per OpInfo and dtype")
    ap.add_argument("--only", help="a regular expression: the OpInfos whose names match")
    ap.add_argument("--daemon", default=os.environ.get("OPD_DAEMON"),
                    help="the opd executable (default $OPD_DAEMON)")
    ap.add_argument("--deadline", type=float, default=110,
                    help="seconds: past them the run stops, and a hang ends the process")
    ap.add_argument("--dtypes", default=",".join(DTYPES),
                    help="the sample dtypes, among " + ", ".join(DTYPES) + " (comma-separated)")
    ap.add_argument("--verbose", action="store_true", help="a line per operator")
    ap.add_argument("--no-inplace", dest="inplace", action="store_false",
                    help="only the function variants (not also the in-place ones)")
    a = ap.parse_args(argv)
    if not a.daemon:
        ap.error("no daemon: --daemon or $OPD_DAEMON")
    dtypes = [d for d in a.dtypes.split(",") if d]
    if not dtypes or any(d not in DTYPES for d in dtypes):
        ap.error(f"--dtypes: a comma-separated list among {', '.join(DTYPES)}")
    faulthandler.dump_traceback_later(a.deadline + 30, exit=True)
    warnings.simplefilter("ignore")  # PyTorch's deprecations, opd's fallback warnings
    start = time.monotonic()

    import torch
    try:
        import expecttest  # noqa: F401 (PyTorch's test helpers import it)
    except ImportError:
        sys.path.insert(0, os.path.join(HERE, "opinfo_stub"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    import opd
    import opd.torch
    torch.set_num_threads(1)

    proc, url, tmp = start_daemon(a.daemon)
    results, crashes, unfinished = {}, [], False
    client = opd.connect(url)
    try:
        runner = Runner(torch, opd, client, a.mode == "fallback")
        only = re.compile(a.only) if a.only else None
        for opinfo in op_db:
            name = opinfo_name(opinfo)
            if only and not only.search(name):
                continue
            if time.monotonic() - start > a.deadline:
                unfinished = True
                break
            base_name = name
            variants = [(name, opinfo)]
            if a.inplace and opinfo.inplace_variant is not None:
                variants.append((name + " (in-place)", opinfo.inplace_variant))
            for name, fn in variants:
                reason, rule = UNSPECIFIED.get(base_name, (None, None))
                op_start = time.monotonic()
                counts = {"pass": 0, "wrong": 0, "error": 0, "skip": 0, "errors": {},
                          "wrong_samples": []}
                supported = opinfo.supported_dtypes("cpu")
                for dname in dtypes:
                    dtype = getattr(torch, dname)
                    if dtype not in supported:
                        continue
                    torch.manual_seed(0)
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            samples = []
                            for s in opinfo.sample_inputs("cpu", dtype):
                                samples.append(s)
                                if len(samples) == a.samples:
                                    break
                    except Exception:  # noqa: BLE001 (PyTorch's own sample generator)
                        continue
                    for i, sample in enumerate(samples):
                        try:
                            outcome, detail = runner.run(fn, sample, rule)
                        except opd.ConnectionLost as e:
                            outcome, detail = "error", f"ConnectionLost: {e}"
                            try:  # a daemon that dies may still be writing its report
                                proc.wait(30)
                            except subprocess.TimeoutExpired:
                                pass
                            if proc.poll() is not None:
                                with open(os.path.join(tmp.name, "opd.log")) as f:
                                    tail = f.read()[-4000:]
                                crashes.append(f"{name} {dname} sample {i}: exit status "
                                               f"{proc.returncode}\n{tail}")
                                proc, url, tmp = start_daemon(a.daemon)
                            client.close()
                            client = opd.connect(url)
                            runner.client = client
                        counts[outcome] += 1
                        if outcome == "error":
                            counts["errors"][detail] = counts["errors"].get(detail, 0) + 1
                        elif outcome == "wrong":
                            counts["wrong_samples"].append(f"{dname} sample {i}: {detail}")
                done = counts["pass"] + counts["wrong"] + counts["error"]
                counts["status"] = ("wrong" if counts["wrong"] else "untested" if not done else
                                    "all" if counts["pass"] == done else
                                    "none" if not counts["pass"] else "some")
                counts["seconds"] = round(time.monotonic() - op_start, 3)
                if reason:
                    counts["unspecified"] = f"{reason}: {rule} compared"
                results[name] = counts
                if a.verbose:
                    first_error = next(iter(counts["errors"]), "")
                    print(f"{counts['status']:8} {name}: {counts['pass']} pass, "
                          f"{counts['wrong']} wrong, {counts['error']} error {first_error[:120]}",
                          flush=True)
                    for w in counts["wrong_samples"]:
                        print(f"         {w[:300]}", flush=True)
    finally:
        client.close()
        stop_daemon(proc)
        tmp.cleanup()

    totals = {k: sum(1 for r in results.values() if r["status"] == k)
              for k in ("all", "some", "none", "wrong", "untested")}
    samples = {k: sum(r[k] for r in results.values()) for k in ("pass", "wrong", "error", "skip")}
    wrong = {n: r["wrong_samples"] for n, r in results.items() if r["wrong"]}
    summary = {"mode": a.mode, "dtypes": dtypes, "opinfos": len(results), "operators": totals,
               "samples": samples,
               "wrong": wrong, "daemon_crashes": crashes, "unfinished": unfinished,
               "seconds": round(time.monotonic() - start, 1)}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({**summary, "results": results}, f, indent=1, sort_keys=True)
    print(f"opinfo {a.mode}: {len(results)} OpInfos and in-place variants: "
          f"{totals['all']} all samples pass, "
          f"{totals['some']} some, {totals['none']} none (errors only), {totals['wrong']} WRONG, "
          f"{totals['untested']} untested; samples {samples['pass']} pass, {samples['error']} "
          f"error, {samples['wrong']} WRONG, {samples['skip']} eager refused; "
          f"{summary['seconds']} s", flush=True)
    for n, ws in wrong.items():
        print(f"WRONG {n}: {ws[0][:300]}", flush=True)
    for c in crashes:
        print(f"DAEMON CRASHED at {c}", flush=True)
    if unfinished:
        print(f"UNFINISHED: past the deadline of {a.deadline} s", flush=True)
    faulthandler.cancel_dump_traceback_later()
    # a run cut short by its deadline (a loaded machine) fails nothing by itself: it says so
    return 1 if wrong or crashes else 0


if __name__ == "__main__":
    sys.exit(main())
