// Package e2e tests the built petstore binary from outside, as a process
// among the parts it meets when deployed: kill -9 and restart (crash),
// floods of connections against its bounds (conns), its container image
// under podman (image), its systemd unit under systemd-analyze
// (serviceunit) and deploy/cluster.sh with real etcd members
// (clusterscript). It holds tests only; the helpers that run the
// binary are internal/petstoretest's.
//
// Its tests run from the repository's root (TestMain changes to it), where
// the scripts, the unit and the Makefile they use are.
package e2e
