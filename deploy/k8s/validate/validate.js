#!/usr/bin/env node
// Validates Overseer's Kubernetes manifests against the Kubernetes API schemas with the
// npm package kubernetes-models (and @kubernetes-models/prometheus-operator for the
// ServiceMonitor): every object of every file that deploy/k8s/kustomization.yaml and
// deploy/k8s/monitoring/kustomization.yaml list, unknown fields included. With a
// `kubectl` on the PATH, also the objects `kubectl kustomize` renders from them.
//
//   node deploy/k8s/validate/validate.js      (./dev k8s-validate installs and runs it)
//
// Prints a line per object and "k8s manifests: N objects valid"; exits 1 on any error.

"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const yaml = require("js-yaml");

const K8S = path.resolve(__dirname, "..");
const KUSTOMIZATIONS = [K8S, path.join(K8S, "monitoring")];

// The model class of an object, from its apiVersion and kind (the packages are ES
// modules: loaded with import()).
async function modelOf(apiVersion, kind) {
  const module = apiVersion.startsWith("monitoring.coreos.com/")
    ? `@kubernetes-models/prometheus-operator/${apiVersion}`
    : `kubernetes-models/${apiVersion}`;
  try {
    const models = await import(module);
    return models[kind] || null;
  } catch (e) {
    return null;
  }
}

async function validate(doc, where, errors) {
  if (!doc || typeof doc !== "object") return 0;
  // kustomize's secretGenerator wraps base64 at 70 columns; the API server's decoder
  // (Go's base64) skips the newlines, the schema's "byte" format does not.
  if (doc.kind === "Secret" && doc.data) {
    for (const key of Object.keys(doc.data)) doc.data[key] = String(doc.data[key]).replace(/\s+/g, "");
  }
  const Model = await modelOf(doc.apiVersion || "", doc.kind || "");
  const name = `${doc.apiVersion} ${doc.kind} ${doc.metadata && doc.metadata.name} (${where})`;
  if (!Model) {
    errors.push(`${name}: no schema for this apiVersion and kind`);
    return 0;
  }
  try {
    new Model(doc).validate();
    console.log(`ok     ${name}`);
    return 1;
  } catch (e) {
    errors.push(`${name}: ${e.message}`);
    return 0;
  }
}

async function main() {
  const errors = [];
  let valid = 0;
  for (const dir of KUSTOMIZATIONS) {
    const kustomization = yaml.load(fs.readFileSync(path.join(dir, "kustomization.yaml"), "utf8"));
    for (const resource of kustomization.resources || []) {
      const file = path.join(dir, resource);
      if (!fs.existsSync(file)) {
        errors.push(`${path.relative(K8S, dir) || "."}/kustomization.yaml lists ${resource}, which is missing`);
        continue;
      }
      for (const doc of yaml.loadAll(fs.readFileSync(file, "utf8"))) {
        valid += await validate(doc, path.relative(K8S, file), errors);
      }
    }
    let kubectl = null;
    try {
      execFileSync("kubectl", ["version", "--client"], { stdio: "ignore" });
      kubectl = "kubectl";
    } catch (e) {
      // No kubectl: the files were checked one by one above.
    }
    if (kubectl) {
      const rendered = execFileSync(kubectl, ["kustomize", dir], { encoding: "utf8" });
      for (const doc of yaml.loadAll(rendered)) {
        valid += await validate(doc, `kubectl kustomize ${path.relative(K8S, dir) || "."}`, errors);
      }
    }
  }
  for (const error of errors) console.error(`ERROR  ${error}`);
  console.log(`k8s manifests: ${valid} objects valid, ${errors.length} errors`);
  process.exit(errors.length === 0 ? 0 : 1);
}

main();
