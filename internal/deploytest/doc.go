// Package deploytest checks weir's deployment files, since no Docker
// engine or Kubernetes cluster runs where the tests do: the Dockerfile
// (its stages, and its build step run for real), and every manifest under
// deploy/kubernetes decoded strictly against the Kubernetes API types and
// cross-checked (selectors, ports, probes, volumes, weir's flags and
// configuration keys). It has no code of its own; only its tests import
// k8s.io/api, so the weir binary does not depend on it.
package deploytest
