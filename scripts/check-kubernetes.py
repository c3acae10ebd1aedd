#!/usr/bin/env python3
"""What the Kubernetes schemas cannot say about deploy/kubernetes/.

Run by scripts/check-deploy.sh (its fourth part) after every object passed
kubernetes-validate, on the objects as `kubectl kustomize` renders them (or
on the files themselves where there is no kubectl):

    check-kubernetes.py --version 0.1.0 [--rendered FILE] deploy/kubernetes

Checks that every pod runs as the image's user (deploy/Containerfile's
USER), non-root, with the runtime's seccomp profile and no API token; that
every container has a read-only root, no capabilities and no privilege
escalation, runs the image release.sh builds (seekless:VERSION) with
resource requests, and runs `seekless pwned serve` or `pwned update`; that
serve listens where its Service and its startup, readiness and liveness
probes on /health reach it; that each update writes the index serve reads
(and the bundles it serves), trusts CA certificates from a volume when it
reaches an HTTPS upstream (the image has none), and names a Service of
these manifests when it refreshes from a mirror; that every Service and
PodDisruptionBudget selects a Deployment's pods.

Prints a line per container, `WHERE<TAB>COMMAND<TAB>FLAGS`, for the flags
to be checked against the binary's own help; exits 1 with one line saying
what is wrong otherwise.
"""

import argparse
import os
import re
import sys
from urllib.parse import urlsplit

import yaml

IMAGE = "seekless"
HEALTH = "/health"
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


class Refused(Exception):
    pass


def need(condition, what):
    if not condition:
        raise Refused(what)


def image_user(containerfile):
    """The (uid, gid) of the Containerfile's USER line."""
    with open(containerfile) as f:
        users = re.findall(r"^USER\s+(\d+):(\d+)\s*$", f.read(), re.MULTILINE)
    need(len(users) == 1, f"{containerfile}: no single numeric `USER UID:GID` line")
    return int(users[0][0]), int(users[0][1])


def check_kustomization(path, files, version):
    with open(path) as f:
        kustomization = yaml.safe_load(f)
    listed = set(kustomization.get("resources", []))
    present = {os.path.basename(p) for p in files}
    need(
        listed == present,
        f"{path} lists {sorted(listed)}, the directory holds {sorted(present)}",
    )
    images = kustomization.get("images", [])
    need(
        images == [{"name": IMAGE, "newTag": version}],
        f"{path}: images must be exactly [{{name: {IMAGE}, newTag: {version}}}] "
        f"(the image scripts/release.sh builds for this version), not {images}",
    )


def flag_values(args, *names):
    """The values of a flag given as `--flag VALUE` or `--flag=VALUE`."""
    values = []
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                values.append(args[i + 1])
            elif arg.startswith(name + "="):
                values.append(arg[len(name) + 1 :])
    return values


def dir_path(path):
    return path.rstrip("/")


def mount_of(container, path):
    """The volume mount holding `path` in `container` (the longest)."""
    best = None
    for mount in container.get("volumeMounts", []):
        root = dir_path(mount["mountPath"])
        if (path == root or path.startswith(root + "/")) and (
            best is None or len(root) > len(dir_path(best["mountPath"]))
        ):
            best = mount
    return best


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_container(where, c, pod, version):
    csc = c.get("securityContext", {})
    need(csc.get("readOnlyRootFilesystem") is True, f"{where}: readOnlyRootFilesystem must be true")
    need(csc.get("allowPrivilegeEscalation") is False, f"{where}: allowPrivilegeEscalation must be false")
    need(csc.get("privileged") is not True, f"{where}: must not be privileged")
    caps = csc.get("capabilities", {})
    need("ALL" in caps.get("drop", []), f"{where}: every capability must be dropped (drop: [ALL])")
    need(not caps.get("add"), f"{where}: adds capabilities {caps.get('add')}")
    need(csc.get("runAsUser", 1) != 0, f"{where}: runs as root (runAsUser: 0)")
    need(csc.get("runAsNonRoot", True) is not False, f"{where}: runAsNonRoot: false")
    name, _, tag = c["image"].partition(":")
    need(name == IMAGE, f"{where}: runs image {c['image']}, not {IMAGE}")
    need(tag in ("", version), f"{where}: runs {c['image']}, not {IMAGE}:{version} (this version)")
    need("command" not in c, f"{where}: `command` replaces the image's entrypoint (/seekless): give `args`")
    requests = c.get("resources", {}).get("requests", {})
    need("cpu" in requests and "memory" in requests, f"{where}: requests no cpu or memory")
    for mount in c.get("volumeMounts", []):
        need(
            any(v["name"] == mount["name"] for v in pod.get("volumes", [])),
            f"{where}: mounts volume {mount['name']}, which the pod does not have",
        )
    args = [str(a) for a in c.get("args", [])]
    need(
        len(args) >= 3 and args[0] == "pwned" and args[1] in ("serve", "update"),
        f"{where}: args {args} are no `seekless pwned serve` or `pwned update` command",
    )
    return args


def check_serve(where, c, args):
    indexes = flag_values(args, "-i", "--index")
    need(indexes, f"{where}: serve has no -i INDEX")
    for index in indexes:
        need(mount_of(c, index) is not None, f"{where}: {index} is on no volume")
    listens = flag_values(args, "--listen")
    need(len(listens) == 1, f"{where}: serve needs one --listen (the probes' and the Service's port)")
    host, _, port = listens[0].rpartition(":")
    need(port.isdigit(), f"{where}: --listen {listens[0]} names no port number")
    need(
        host in ("0.0.0.0", "[::]"),
        f"{where}: --listen {listens[0]} is not reachable from the kubelet and the Service (0.0.0.0:PORT)",
    )
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    need(str(ports.get("http")) == port, f"{where}: its containerPort `http` is not --listen's port {port}")
    for probe in PROBES:
        get = c.get(probe, {}).get("httpGet", {})
        need(get.get("path") == HEALTH, f"{where}: its {probe} must GET {HEALTH}")
        need(get.get("port") in ("http", int(port)), f"{where}: its {probe} asks port {get.get('port')}, not {port}")
    return indexes


def check_update(where, c, pod, args, served, bundles):
    index = args[2]
    need(not index.startswith("-"), f"{where}: update's first argument must be its INDEX, not {index}")
    mount = mount_of(c, index)
    need(mount is not None and not mount.get("readOnly"), f"{where}: {index} is on no writable volume")
    if served:
        need(
            index in served,
            f"{where}: updates {index}, which the pod's serve does not serve ({sorted(served)})",
        )
    for out in flag_values(args, "--bundle-out"):
        if bundles:
            need(
                dir_path(out) in bundles,
                f"{where}: writes bundles to {out}, serve serves {sorted(bundles)}",
            )
    base = (flag_values(args, "--base-url") or ["https://api.pwnedpasswords.com"])[-1]
    url = urlsplit(base)
    if url.scheme == "https":
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        certs = (flag_values(args, "--ca-cert") or [env.get("SSL_CERT_FILE")])[-1]
        mount = mount_of(c, certs) if certs else None
        need(
            mount is not None,
            f"{where}: reaches {base} over HTTPS, and the image has no CA certificates: "
            "SSL_CERT_FILE (or --ca-cert) naming a file on a mounted volume is needed",
        )
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        source = volume.get("configMap") or volume.get("secret") or {}
        items = [i["path"] for i in source.get("items", [])]
        inside = certs[len(dir_path(mount["mountPath"])) + 1 :]
        need(
            not items or inside in items,
            f"{where}: SSL_CERT_FILE {certs} is not among volume {mount['name']}'s items {items}",
        )
    return url


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", required=True, help="the workspace's version")
    parser.add_argument("--containerfile", default="deploy/Containerfile")
    parser.add_argument("--rendered", help="the objects as `kubectl kustomize DIR` renders them")
    parser.add_argument("dir", help="the kustomization's directory")
    options = parser.parse_args()

    kustomization = os.path.join(options.dir, "kustomization.yaml")
    files = sorted(
        os.path.join(options.dir, f)
        for f in os.listdir(options.dir)
        if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml"
    )
    check_kustomization(kustomization, files, options.version)
    uid, gid = image_user(options.containerfile)
    objects = []
    for path in [options.rendered] if options.rendered else files:
        with open(path) as f:
            objects += [o for o in yaml.safe_load_all(f) if o]
    if options.rendered:
        for o in objects:
            for c in o.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                need(":" in c["image"], f"{o['metadata']['name']}/{c['name']}: rendered with no tag")

    deployments = [o for o in objects if o["kind"] == "Deployment"]
    services = [o for o in objects if o["kind"] == "Service"]
    need(deployments, "no Deployment in deploy/kubernetes")
    # A mirror that replicas refresh from: a Service's name and port, and
    # whether its pods serve bundles.
    mirrors = {}
    upstreams = []
    lines = []
    for d in deployments:
        name = d["metadata"]["name"]
        pod = d["spec"]["template"]["spec"]
        labels = d["spec"]["template"]["metadata"].get("labels", {})
        need(
            selects(d["spec"]["selector"].get("matchLabels"), labels),
            f"{name}: its selector does not select its own pods",
        )
        sc = pod.get("securityContext", {})
        need(sc.get("runAsNonRoot") is True, f"{name}: the pod must set runAsNonRoot: true")
        need(
            (sc.get("runAsUser"), sc.get("runAsGroup"), sc.get("fsGroup")) == (uid, gid, gid),
            f"{name}: runAsUser, runAsGroup and fsGroup must be the image's user {uid}:{gid}",
        )
        need(
            sc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
            f"{name}: the pod must use the runtime's seccomp profile (RuntimeDefault)",
        )
        need(pod.get("automountServiceAccountToken") is False, f"{name}: automountServiceAccountToken must be false")
        for host in ("hostNetwork", "hostPID", "hostIPC"):
            need(pod.get(host) is not True, f"{name}: {host}")
        for volume in pod.get("volumes", []):
            need("hostPath" not in volume, f"{name}: volume {volume['name']} is a hostPath")

        containers = pod.get("initContainers", []) + pod["containers"]
        args_of = {c["name"]: check_container(f"{name}/{c['name']}", c, pod, options.version) for c in containers}
        served, bundles, serves = set(), set(), False
        for c in pod["containers"]:
            args = args_of[c["name"]]
            if args[1] != "serve":
                continue
            serves = True
            served.update(check_serve(f"{name}/{c['name']}", c, args))
            bundles.update(dir_path(b) for b in flag_values(args, "--bundles"))
            port = next(p["containerPort"] for p in c["ports"] if p.get("name") == "http")
            for s in services:
                if selects(s["spec"].get("selector"), labels):
                    for p in s["spec"]["ports"]:
                        need(
                            p.get("targetPort") in ("http", port),
                            f"{s['metadata']['name']}: targetPort {p.get('targetPort')} is not {name}'s serve",
                        )
                        mirrors[(s["metadata"]["name"], p["port"])] = bool(bundles)
        need(serves, f"{name}: no container runs `seekless pwned serve`")
        for c in containers:
            where = f"{name}/{c['name']}"
            args = args_of[c["name"]]
            if args[1] == "update":
                need(
                    c in pod["containers"] or "--every" not in args,
                    f"{where}: an init container must end (no --every)",
                )
                url = check_update(where, c, pod, args, served, bundles)
                if url.hostname != "api.pwnedpasswords.com":
                    upstreams.append((where, url))
            else:
                need(c in pod["containers"], f"{where}: serve as an init container never ends")
            flags = [a.split("=")[0] for a in args if a.startswith("-")]
            lines.append(f"{where}\t{args[1]}\t{' '.join(flags)}")

    for where, url in upstreams:
        port = url.port or (443 if url.scheme == "https" else 80)
        service = url.hostname.split(".")[0]
        need(
            (service, port) in mirrors,
            f"{where}: refreshes from {url.geturl()}, which is no Service port of these manifests",
        )
        need(
            mirrors[(service, port)],
            f"{where}: refreshes from {service}, whose serve has no --bundles (range by range every time)",
        )
    for o in objects:
        if o["kind"] in ("Service", "PodDisruptionBudget"):
            spec = o["spec"]
            selector = spec.get("selector", {})
            selector = selector.get("matchLabels", selector) if o["kind"] == "PodDisruptionBudget" else selector
            need(
                any(selects(selector, d["spec"]["template"]["metadata"].get("labels", {})) for d in deployments),
                f"{o['kind']} {o['metadata']['name']}: its selector {selector} selects no Deployment's pods",
            )
    print("\n".join(lines))


if __name__ == "__main__":
    try:
        main()
    except Refused as e:
        sys.exit(f"deploy: FAILED: {e}")
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, StopIteration) as e:
        sys.exit(f"deploy: FAILED: deploy/kubernetes cannot be read as expected: {type(e).__name__}: {e}")
