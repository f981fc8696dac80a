#!/usr/bin/env node
// Turns deploy/k8s into what `podman kube play` can run: podman 4.3 plays Pods,
// Deployments, ConfigMaps and PersistentVolumeClaims, not StatefulSets, Services or
// Jobs. Container ports are dropped: podman publishes each on the host, where every
// pod's 2222 would clash (Kubernetes gives each pod an address of its own). Each StatefulSet becomes its Pods (name-0, name-1, ... with the hostname a
// StatefulSet gives them, and a claim per volumeClaimTemplate); Deployments, ConfigMaps
// and claims pass through; Services, Namespaces and Jobs (the trainers: they need the
// Services' DNS names) are left out. The TLS Secrets (kustomization.yaml's
// secretGenerator, which kube play does not run) become host directories:
// $OVERSEER_KUBE_TLS_DIR/<identity> for the Secret overseer-tls-<identity>, as
// deploy/tls/make-certs.sh lays them out. Prints the YAML stream on stdout.
//
//   OVERSEER_KUBE_TLS_DIR=/tmp/certs node deploy/k8s/validate/kube_play_pods.js > /tmp/overseer-kube.yaml
//   podman kube play --network NET /tmp/overseer-kube.yaml

"use strict";
const fs = require("fs");
const path = require("path");
const yaml = require("js-yaml");

const K8S = path.resolve(__dirname, "..");
const kustomization = yaml.load(fs.readFileSync(path.join(K8S, "kustomization.yaml"), "utf8"));
const out = [];
for (const resource of kustomization.resources) {
  for (const doc of yaml.loadAll(fs.readFileSync(path.join(K8S, resource), "utf8"))) {
    if (!doc) continue;
    if (["ConfigMap", "PersistentVolumeClaim", "Deployment"].includes(doc.kind)) {
      out.push(doc);
    } else if (doc.kind === "StatefulSet") {
      const name = doc.metadata.name;
      for (let i = 0; i < (doc.spec.replicas || 1); i++) {
        const spec = JSON.parse(JSON.stringify(doc.spec.template.spec));
        spec.hostname = `${name}-${i}`;
        spec.volumes = spec.volumes || [];
        for (const claim of doc.spec.volumeClaimTemplates || []) {
          const claimName = `${claim.metadata.name}-${name}-${i}`;
          out.push({ apiVersion: "v1", kind: "PersistentVolumeClaim",
                     metadata: { name: claimName }, spec: claim.spec });
          spec.volumes.push({ name: claim.metadata.name,
                              persistentVolumeClaim: { claimName } });
        }
        out.push({ apiVersion: "v1", kind: "Pod",
                   metadata: { name: `${name}-${i}`, labels: doc.spec.template.metadata.labels },
                   spec });
      }
    }
  }
}
const tlsDir = process.env.OVERSEER_KUBE_TLS_DIR;
for (const doc of out) {
  const spec = doc.kind === "Deployment" ? doc.spec.template.spec : doc.spec;
  for (const container of (spec && spec.containers) || []) delete container.ports;
  for (const volume of (spec && spec.volumes) || []) {
    if (!volume.secret) continue;
    if (!tlsDir) {
      process.stderr.write("kube_play_pods.js: set OVERSEER_KUBE_TLS_DIR (the pods mount TLS Secrets)\n");
      process.exit(2);
    }
    const identity = volume.secret.secretName.replace(/^overseer-tls-/, "");
    volume.hostPath = { path: path.join(tlsDir, identity), type: "Directory" };
    delete volume.secret;
  }
}
process.stdout.write(out.map((doc) => yaml.dump(doc)).join("---\n"));
