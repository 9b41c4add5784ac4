// Package k8s tests gpuwatch against a real Kubernetes control plane, started
// in the test process on loopback: an embedded etcd, the real kube-apiserver
// (RBAC on), the real kube-scheduler configured with gpuwatch's extender, and
// the real disruption controller (PodDisruptionBudget status). There is no
// kubelet: the tests create Node objects and set pods Running and Ready through
// the status subresource, as a kubelet would.
//
// It is its own Go module so that gpuwatch's module does not depend on
// k8s.io/kubernetes; `make test` runs it (cd test/k8s && go test ./...).
//
// The whole control plane is started once per test binary (TestMain) and
// shared by the tests, each in its own namespace and on its own nodes.
package k8s
