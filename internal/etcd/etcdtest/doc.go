// Package etcdtest holds what the tests of the etcd client and of the etcd
// store share: Fake, an etcd JSON gateway over a map that can be made to
// fail on cue, and StartCluster, a real 3-member etcd cluster. Only tests
// import it.
package etcdtest
