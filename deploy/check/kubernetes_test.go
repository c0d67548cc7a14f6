package check

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The manifests are decoded strictly into the API server's own Go types (k8s.io/api): an
// unknown or misspelled field, a value of the wrong type or a duplicate key fails, with no
// schema to download and no cluster to ask. What a schema cannot know — that the probes
// hit the paths the daemon serves, that the Service lists not-ready pods, that the daemon
// accepts its arguments — is checked below.

type manifests struct {
	services    []corev1.Service
	statefulSet []appsv1.StatefulSet
	pdbs        []policyv1.PodDisruptionBudget
}

func decodeManifests(t *testing.T, rel string) manifests {
	t.Helper()
	var m manifests
	for i, doc := range bytes.Split(readFile(t, rel), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s document %d: %v", rel, i, err)
		}
		var err error
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Service":
			var s corev1.Service
			err = yaml.UnmarshalStrict(doc, &s)
			m.services = append(m.services, s)
		case "apps/v1 StatefulSet":
			var s appsv1.StatefulSet
			err = yaml.UnmarshalStrict(doc, &s)
			m.statefulSet = append(m.statefulSet, s)
		case "policy/v1 PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			err = yaml.UnmarshalStrict(doc, &p)
			m.pdbs = append(m.pdbs, p)
		default:
			t.Fatalf("%s document %d: kind %q of %q is not checked here: add it", rel, i, tm.Kind, tm.APIVersion)
		}
		if err != nil {
			t.Fatalf("%s document %d (%s): %v", rel, i, tm.Kind, err)
		}
	}
	return m
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}

func TestKubernetesManifests(t *testing.T) {
	m := decodeManifests(t, "deploy/kubernetes/shardmesh.yaml")
	if len(m.services) != 1 || len(m.statefulSet) != 1 || len(m.pdbs) != 1 {
		t.Fatalf("want one Service, StatefulSet and PodDisruptionBudget; got %d, %d, %d", len(m.services), len(m.statefulSet), len(m.pdbs))
	}
	svc, sts := m.services[0], m.statefulSet[0]
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Error("the Service must be headless (clusterIP: None): its A records are the members")
	}
	if !svc.Spec.PublishNotReadyAddresses {
		t.Error("the Service must publish not-ready addresses: members find each other before any is ready")
	}
	if sts.Spec.ServiceName != svc.Name {
		t.Errorf("serviceName %q, want the headless Service %q", sts.Spec.ServiceName, svc.Name)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Error("podManagementPolicy must be Parallel: with OrderedReady the first pod waits to be ready, which needs the others")
	}
	for _, sel := range []map[string]string{svc.Spec.Selector, sts.Spec.Selector.MatchLabels, m.pdbs[0].Spec.Selector.MatchLabels} {
		for k, v := range sel {
			if sts.Spec.Template.Labels[k] != v {
				t.Errorf("selector %s=%s does not select the pods (labels %v)", k, v, sts.Spec.Template.Labels)
			}
		}
	}

	pod := sts.Spec.Template.Spec
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Error("the pod must run as a non-root user")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, p := range svc.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("Service port %s targets %q, which the container does not name", p.Name, p.TargetPort.String())
		}
	}
	cfg := effective(t, "StatefulSet args", c.Args)
	wantPath := map[string]string{"liveness": "/healthz", "readiness": "/readyz", "startup": "/healthz"}
	for kind, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", kind)
			continue
		}
		if probe.HTTPGet.Path != wantPath[kind] {
			t.Errorf("%s probe on %s, want %s", kind, probe.HTTPGet.Path, wantPath[kind])
		}
		port := ports[probe.HTTPGet.Port.String()]
		if !strings.HasSuffix(strings.Trim(cfg["metrics-listen"], `"`), ":"+strconv.Itoa(int(port))) {
			t.Errorf("%s probe on port %s (%d), but the daemon serves probes on --metrics-listen %s", kind, probe.HTTPGet.Port.String(), port, cfg["metrics-listen"])
		}
	}
	if got := strings.Trim(cfg["join-dns"], `"`); got != svc.Name && !strings.HasPrefix(got, svc.Name+".") {
		t.Errorf("--join-dns %s, want the headless Service's name %s", got, svc.Name)
	}
	if !strings.Contains(cfg["listen"], "/tcp/"+strconv.Itoa(int(ports["p2p"]))) {
		t.Errorf("the daemon listens on %s, not on the p2p port %d the Service resolves to", cfg["listen"], ports["p2p"])
	}
	if cfg["cluster.min-nr-of-members"] != strconv.Itoa(int(*sts.Spec.Replicas)) {
		t.Errorf("cluster.min-nr-of-members %s, want the replicas (%d): then every member waits until it sees them all before the cluster forms",
			cfg["cluster.min-nr-of-members"], *sts.Spec.Replicas)
	}
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm.MountPath
	}
	if dir := strings.Trim(cfg["data-dir"], `"`); !slices.Contains(mountsOf(sts), dir) || mounts["data"] != dir {
		t.Errorf("--data-dir %s is not the volume claim's mount (%v)", dir, mounts)
	}
	if key := strings.Trim(cfg["cluster-key"], `"`); !strings.HasPrefix(key, mounts["cluster-key"]+"/") {
		t.Errorf("--cluster-key %s is not in the Secret's mount %s", key, mounts["cluster-key"])
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 70 {
		t.Error("terminationGracePeriodSeconds must cover a graceful leave: handoff-timeout (60s) + 10s")
	}
}

// mountsOf lists where the StatefulSet's volume claims are mounted.
func mountsOf(sts appsv1.StatefulSet) []string {
	var out []string
	for _, pvc := range sts.Spec.VolumeClaimTemplates {
		for _, c := range sts.Spec.Template.Spec.Containers {
			for _, vm := range c.VolumeMounts {
				if vm.Name == pvc.Name {
					out = append(out, vm.MountPath)
				}
			}
		}
	}
	return out
}

// TestStrictDecodingCatchesMistakes: the decoding above would catch a misspelled field.
func TestStrictDecodingCatchesMistakes(t *testing.T) {
	bad := []byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIP: None\n  publishNotReadyAdresses: true\n")
	var s corev1.Service
	if err := yaml.UnmarshalStrict(bad, &s); err == nil || !strings.Contains(err.Error(), "publishNotReadyAdresses") {
		t.Fatalf("a misspelled field decoded: %v", err)
	}
	wrongType := []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replicas: three\n")
	var sts appsv1.StatefulSet
	if err := yaml.UnmarshalStrict(wrongType, &sts); err == nil {
		t.Fatal("replicas: three decoded")
	}
}
