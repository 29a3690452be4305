package resource

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

func exposeNodePort(br *v1alpha1.Broker, first int32, host string) {
	br.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeNodePort, NodePort: &v1alpha1.BrokerNodePortSpec{
		NodePortSpec: v1alpha1.NodePortSpec{FirstPort: first}, AdvertisedHost: host}}
}

func nodePortsOf(svc *corev1.Service) map[string]int32 {
	out := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		out[p.Name] = p.NodePort
	}
	return out
}

func envOf(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// With expose NodePort every broker pod's Service is a NodePort one on the ports the spec
// fixes (fast, HA, remoting; 15 per group), each pod announces its remoting node port at
// $(BROKER_IP1), the node's IP, and keeps its ClusterIP for HA.
func TestBrokerNodePortServicesAndAnnouncedAddresses(t *testing.T) {
	br := broker() // 3 groups of 3
	exposeNodePort(br, 30000, "")
	objs := buildApplied(t, &BrokerBuilder{Instance: br, Scheme: scheme(t), NameServerAddress: "n:9876"})

	seen := map[int32]string{}
	for g, group := range []string{"a", "b", "c"} {
		for id := range 3 {
			pod := fmt.Sprintf("rmq-broker-%s-%d", group, id)
			svc := objs["Service/"+pod].(*corev1.Service)
			base := int32(30000 + 15*g + 3*id)
			want := map[string]int32{"fast": base, "ha": base + 1, "remoting": base + 2}
			if svc.Spec.Type != corev1.ServiceTypeNodePort || !equality.Semantic.DeepEqual(nodePortsOf(svc), want) {
				t.Errorf("%s: type %s node ports %v, want NodePort %v", pod, svc.Spec.Type, nodePortsOf(svc), want)
			}
			if svc.Spec.ClusterIP == "" {
				t.Errorf("%s lost its ClusterIP", pod)
			}
			for _, p := range svc.Spec.Ports {
				if other, taken := seen[p.NodePort]; taken {
					t.Errorf("node port %d of %s is %s's too", p.NodePort, pod, other)
				}
				seen[p.NodePort] = pod
			}
			conf := objs["ConfigMap/rmq-broker-"+group+"-config"].(*corev1.ConfigMap).Data[pod+".conf"]
			wantConf := fmt.Sprintf("brokerIP2=10.96.1.%d\nadvertisedListenPort=%d\n", id, base+2)
			if !strings.HasSuffix(conf, wantConf) || strings.Contains(conf, "brokerIP1=") {
				t.Errorf("%s conf announces not its node port (want the tail %q, no brokerIP1):\n%s", pod, wantConf, conf)
			}
			if !strings.Contains(conf, "listenPort=10911\n") {
				t.Errorf("%s conf: the broker still listens on listenPort:\n%s", pod, conf)
			}
		}
	}
	// The API's bound (firstPort + 15*(groups-1) + 3*replicasPerGroup - 1) is the last port.
	if last := slices.Max(slices.Collect(maps.Keys(seen))); last != 30000+15*2+3*3-1 {
		t.Errorf("last node port %d, want the API's bound %d", last, 30000+15*2+3*3-1)
	}

	c := objs["StatefulSet/rmq-broker-b"].(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0]
	if i := slices.Index(c.Command, "-brokerIP1"); i < 0 || i+1 >= len(c.Command) || c.Command[i+1] != "$(BROKER_IP1)" {
		t.Errorf("command %v lacks -brokerIP1 $(BROKER_IP1)", c.Command)
	}
	env := envOf(c, "BROKER_IP1")
	if env == nil || env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || env.ValueFrom.FieldRef.FieldPath != "status.hostIP" {
		t.Errorf("BROKER_IP1 = %+v, want the node's IP from the downward API", env)
	}

	exposeNodePort(br, 30000, "192.0.2.7")
	sts := buildSTS(t, br, "StatefulSet/rmq-broker-a")
	if env := envOf(sts.Spec.Template.Spec.Containers[0], "BROKER_IP1"); env == nil || env.Value != "192.0.2.7" || env.ValueFrom != nil {
		t.Errorf("with advertisedHost BROKER_IP1 = %+v, want 192.0.2.7", env)
	}
}

// Back at ClusterIP, the stored NodePort Service is updated to type ClusterIP with every
// node port 0 (the API server refuses the change otherwise) and keeps its ClusterIP; the
// pods announce the ClusterIP again, without -brokerIP1.
func TestBrokerBackToClusterIPClearsNodePorts(t *testing.T) {
	br := broker()
	exposeNodePort(br, 31000, "")
	b := &BrokerBuilder{Instance: br, Scheme: scheme(t)}
	svc := buildApplied(t, b)["Service/rmq-broker-a-1"].(*corev1.Service)

	br.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeClusterIP, NodePort: br.Spec.Expose.NodePort}
	objs := buildApplied(t, b)
	pod := &brokerPodService{brokerGroup: brokerGroup{BrokerBuilder: b, index: 0}, id: 1}
	if err := pod.Update(svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ClusterIP != "10.96.1.1" {
		t.Errorf("type %s ClusterIP %q, want ClusterIP 10.96.1.1", svc.Spec.Type, svc.Spec.ClusterIP)
	}
	for name, port := range nodePortsOf(svc) {
		if port != 0 {
			t.Errorf("port %s keeps node port %d", name, port)
		}
	}
	conf := objs["ConfigMap/rmq-broker-a-config"].(*corev1.ConfigMap).Data["rmq-broker-a-1.conf"]
	if !strings.HasSuffix(conf, "brokerIP1=10.96.1.1\nbrokerIP2=10.96.1.1\n") || strings.Contains(conf, "advertisedListenPort") {
		t.Errorf("conf back at ClusterIP:\n%s", conf)
	}
	c := objs["StatefulSet/rmq-broker-a"].(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0]
	if slices.Contains(c.Command, "-brokerIP1") || envOf(c, "BROKER_IP1") != nil {
		t.Errorf("ClusterIP pods get -brokerIP1: %v %v", c.Command, c.Env)
	}
}

// The hash moves with the node ports the pods announce, not with replicasPerGroup (a
// group's ports do not depend on it), and expose ClusterIP hashes as no expose at all, so
// an operator upgrade rolls nothing.
func TestBrokerConfigHashFollowsNodePorts(t *testing.T) {
	br := broker()
	plain := BrokerConfigHash(br, 1)
	br.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeClusterIP}
	if BrokerConfigHash(br, 1) != plain {
		t.Error("expose ClusterIP changed the hash")
	}
	exposeNodePort(br, 30000, "")
	h := BrokerConfigHash(br, 1)
	if h == plain {
		t.Error("expose NodePort kept the hash")
	}
	br.Spec.ReplicasPerGroup = 5
	if BrokerConfigHash(br, 1) != h {
		t.Error("replicasPerGroup moved group b's node ports")
	}
	exposeNodePort(br, 30100, "")
	if BrokerConfigHash(br, 1) == h {
		t.Error("a new firstPort kept the hash")
	}
}

// The NameServer's client Service takes firstPort for the name-server port and
// firstPort+1 for the address server; back at ClusterIP both are 0 again.
func TestNameServerNodePortService(t *testing.T) {
	ns := nameServer()
	ns.Spec.Expose = &v1alpha1.NameServerExpose{Type: v1alpha1.ExposeNodePort,
		NodePort: &v1alpha1.NodePortSpec{FirstPort: 30876}}
	b := &NameServerBuilder{Instance: ns, Scheme: scheme(t)}
	objs := build(t, b.Builders())
	svc := objs["Service/ns"].(*corev1.Service)
	want := map[string]int32{"remoting": 30876, healthPortName: 30877}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || !equality.Semantic.DeepEqual(nodePortsOf(svc), want) {
		t.Errorf("type %s node ports %v, want NodePort %v", svc.Spec.Type, nodePortsOf(svc), want)
	}
	if h := objs["Service/ns-headless"].(*corev1.Service); h.Spec.Type != "" || h.Spec.Ports[0].NodePort != 0 {
		t.Errorf("the headless Service is exposed: %+v", h.Spec)
	}
	ns.Spec.Expose = nil
	if err := (&nameServerService{b}).Update(svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || !equality.Semantic.DeepEqual(nodePortsOf(svc),
		map[string]int32{"remoting": 0, healthPortName: 0}) {
		t.Errorf("back at ClusterIP: type %s node ports %v", svc.Spec.Type, nodePortsOf(svc))
	}
}

// Exposed through node ports or load balancers, the client ports admit every address in
// a rule of their own; HA does not.
func TestNetworkPoliciesAdmitOutsideWhenExposed(t *testing.T) {
	for _, typ := range []v1alpha1.ExposeType{v1alpha1.ExposeNodePort, v1alpha1.ExposeLoadBalancer} {
		t.Run(string(typ), func(t *testing.T) { testNetworkPoliciesAdmitOutside(t, typ) })
	}
}

func testNetworkPoliciesAdmitOutside(t *testing.T, typ v1alpha1.ExposeType) {
	outside := []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}},
		{IPBlock: &networkingv1.IPBlock{CIDR: "::/0"}}}

	br := broker()
	br.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true}
	br.Spec.Expose = &v1alpha1.BrokerExpose{Type: typ}
	np := buildPolicy(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t)}).NetworkPolicy())
	if len(np.Spec.Ingress) != 4 {
		t.Fatalf("ingress = %+v: want the client, HA, metrics and outside rules", np.Spec.Ingress)
	}
	last := np.Spec.Ingress[3]
	if got := ports(t, last); !equality.Semantic.DeepEqual(got, []int32{10911, 10909}) || !equality.Semantic.DeepEqual(last.From, outside) {
		t.Errorf("outside rule: ports %v from %+v, want listenPort and the fast channel from every address", got, last.From)
	}
	if got := ports(t, np.Spec.Ingress[1]); !equality.Semantic.DeepEqual(got, []int32{10912}) || len(np.Spec.Ingress[1].From) != 1 {
		t.Errorf("HA rule %+v: the Broker's own pods only", np.Spec.Ingress[1])
	}

	ns := nameServer()
	ns.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true}
	ns.Spec.Expose = &v1alpha1.NameServerExpose{Type: typ}
	np = buildPolicy(t, (&NameServerBuilder{Instance: ns, Scheme: scheme(t)}).NetworkPolicy())
	last = np.Spec.Ingress[len(np.Spec.Ingress)-1]
	if got := ports(t, last); !equality.Semantic.DeepEqual(got, []int32{9876}) || !equality.Semantic.DeepEqual(last.From, outside) {
		t.Errorf("name server outside rule: ports %v from %+v, want listenPort (not the address server) from every address", got, last.From)
	}
}

func exposeLoadBalancer(br *v1alpha1.Broker, lb *v1alpha1.LoadBalancerSpec) {
	br.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeLoadBalancer, LoadBalancer: lb}
}

// lbIPs gives every pod Service of br's groups the ingress IP 198.51.100.<10*group+id>.
func lbIPs(br *v1alpha1.Broker) map[string]corev1.LoadBalancerIngress {
	out := map[string]corev1.LoadBalancerIngress{}
	for g := range br.Spec.Groups {
		for id := range br.Spec.ReplicasPerGroup {
			out[BrokerPodName(br, g, id)] = corev1.LoadBalancerIngress{IP: fmt.Sprintf("198.51.100.%d", 10*g+id)}
		}
	}
	return out
}

// With expose LoadBalancer every broker pod's Service is a LoadBalancer one on the
// unchanged ports, with the spec's annotations and source ranges, and once the cloud has
// given it an IP the pod announces that IP as brokerIP1 and its ClusterIP as brokerIP2.
func TestBrokerLoadBalancerServicesAnnounceTheirIngressIP(t *testing.T) {
	br := broker() // 3 groups of 3
	exposeLoadBalancer(br, &v1alpha1.LoadBalancerSpec{
		Annotations:  map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
		SourceRanges: []string{"203.0.113.0/24"}})
	b := &BrokerBuilder{Instance: br, Scheme: scheme(t), NameServerAddress: "n:9876"}
	objs := buildWithIngress(t, b, lbIPs(br))
	if p := b.PendingLoadBalancers(); p != "" {
		t.Errorf("pending with every IP known: %s", p)
	}

	svc := objs["Service/rmq-broker-b-1"].(*corev1.Service)
	ports := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		ports[p.Name] = p.Port
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.ClusterIP != "10.96.1.1" ||
		!equality.Semantic.DeepEqual(ports, map[string]int32{"remoting": 10911, "fast": 10909, "ha": 10912}) {
		t.Errorf("pod Service: type %s ClusterIP %q ports %v", svc.Spec.Type, svc.Spec.ClusterIP, ports)
	}
	if svc.Annotations["service.beta.kubernetes.io/aws-load-balancer-type"] != "nlb" ||
		!equality.Semantic.DeepEqual(svc.Spec.LoadBalancerSourceRanges, []string{"203.0.113.0/24"}) {
		t.Errorf("annotations %v source ranges %v", svc.Annotations, svc.Spec.LoadBalancerSourceRanges)
	}
	conf := objs["ConfigMap/rmq-broker-b-config"].(*corev1.ConfigMap).Data["rmq-broker-b-1.conf"]
	if !strings.HasSuffix(conf, "brokerIP1=198.51.100.11\nbrokerIP2=10.96.1.1\n") || strings.Contains(conf, "advertisedListenPort") {
		t.Errorf("conf does not announce the load balancer's IP:\n%s", conf)
	}
	sts := objs["StatefulSet/rmq-broker-b"].(*appsv1.StatefulSet)
	want := "rmq-broker-b-0=10.96.1.0/198.51.100.10,rmq-broker-b-1=10.96.1.1/198.51.100.11,rmq-broker-b-2=10.96.1.2/198.51.100.12"
	if got := sts.Spec.Template.Annotations[BrokerAddressesAnnotation]; got != want {
		t.Errorf("pod template addresses %q, want %q", got, want)
	}
	if c := sts.Spec.Template.Spec.Containers[0]; slices.Contains(c.Command, "-brokerIP1") {
		t.Errorf("LoadBalancer pods get -brokerIP1: %v", c.Command)
	}
}

// A group whose pod Services do not all have a load-balancer IP gets neither its
// ConfigMap nor its StatefulSet (a stored one stays as it is), and PendingLoadBalancers
// names the Services, a hostname-only ingress with why; the other groups go ahead.
func TestBrokerLoadBalancerPendingHoldsTheGroup(t *testing.T) {
	br := broker()
	exposeLoadBalancer(br, nil)
	ingress := lbIPs(br)
	delete(ingress, "rmq-broker-b-1")
	ingress["rmq-broker-c-0"] = corev1.LoadBalancerIngress{Hostname: "abc.elb.example.com"}
	b := &BrokerBuilder{Instance: br, Scheme: scheme(t), NameServerAddress: "n:9876"}
	objs := buildWithIngress(t, b, ingress)

	for _, key := range []string{"ConfigMap/rmq-broker-a-config", "StatefulSet/rmq-broker-a", "Service/rmq-broker-b-2",
		"Service/rmq-broker-b-ha", "PodDisruptionBudget/rmq-broker-c"} {
		if objs[key] == nil {
			t.Errorf("%s not applied", key)
		}
	}
	for _, key := range []string{"ConfigMap/rmq-broker-b-config", "StatefulSet/rmq-broker-b",
		"ConfigMap/rmq-broker-c-config", "StatefulSet/rmq-broker-c"} {
		if objs[key] != nil {
			t.Errorf("%s applied while a load balancer of its group has no IP", key)
		}
	}
	p := b.PendingLoadBalancers()
	for _, s := range []string{"rmq-broker-b-1", "rmq-broker-c-0 (hostname abc.elb.example.com only"} {
		if !strings.Contains(p, s) {
			t.Errorf("pending %q does not name %q", p, s)
		}
	}
	if strings.Contains(p, "rmq-broker-a-") || strings.Contains(p, "rmq-broker-b-0") {
		t.Errorf("pending %q names Services that have an IP", p)
	}
}

// A load balancer that comes back with another IP changes its group's pod template (the
// group rolls to announce it), not the config hash nor the other groups.
func TestBrokerLoadBalancerNewIPRollsItsGroup(t *testing.T) {
	br := broker()
	exposeLoadBalancer(br, nil)
	ingress := lbIPs(br)
	before := buildWithIngress(t, &BrokerBuilder{Instance: br, Scheme: scheme(t)}, ingress)
	ingress["rmq-broker-a-2"] = corev1.LoadBalancerIngress{IP: "198.51.100.99"}
	after := buildWithIngress(t, &BrokerBuilder{Instance: br, Scheme: scheme(t)}, ingress)

	tpl := func(objs map[string]client.Object, g string) map[string]string {
		return objs["StatefulSet/rmq-broker-"+g].(*appsv1.StatefulSet).Spec.Template.Annotations
	}
	if a, b := tpl(before, "a"), tpl(after, "a"); a[BrokerAddressesAnnotation] == b[BrokerAddressesAnnotation] ||
		a[ConfigHashAnnotation] != b[ConfigHashAnnotation] {
		t.Errorf("group a's template: addresses %q then %q, hash %s then %s", a[BrokerAddressesAnnotation],
			b[BrokerAddressesAnnotation], a[ConfigHashAnnotation], b[ConfigHashAnnotation])
	}
	if !equality.Semantic.DeepEqual(tpl(before, "b"), tpl(after, "b")) {
		t.Error("group b's template changed with group a's load balancer")
	}
	if conf := after["ConfigMap/rmq-broker-a-config"].(*corev1.ConfigMap).Data["rmq-broker-a-2.conf"]; !strings.Contains(conf, "brokerIP1=198.51.100.99\n") {
		t.Errorf("conf after the new IP:\n%s", conf)
	}
}

// A stored LoadBalancer Service keeps the node ports the API server allocated, loses the
// annotations removed from the spec (not those of others), and back at ClusterIP has no
// node ports, source ranges or spec annotations left.
func TestBrokerLoadBalancerServiceUpdates(t *testing.T) {
	br := broker()
	exposeLoadBalancer(br, &v1alpha1.LoadBalancerSpec{
		Annotations: map[string]string{"cloud/internal": "true", "cloud/idle-timeout": "3600"}, SourceRanges: []string{"203.0.113.0/24"}})
	b := &BrokerBuilder{Instance: br, Scheme: scheme(t)}
	svc := buildApplied(t, b)["Service/rmq-broker-a-1"].(*corev1.Service)
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].NodePort = 31000 + int32(i) // the API server's allocation
	}
	svc.Annotations["someone/else"] = "x"
	allocated := nodePortsOf(svc)

	pod := &brokerPodService{brokerGroup: brokerGroup{BrokerBuilder: b, index: 0}, id: 1}
	delete(br.Spec.Expose.LoadBalancer.Annotations, "cloud/idle-timeout")
	if err := pod.Update(svc); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(nodePortsOf(svc), allocated) {
		t.Errorf("node ports %v, want the allocated %v kept", nodePortsOf(svc), allocated)
	}
	if _, ok := svc.Annotations["cloud/idle-timeout"]; ok || svc.Annotations["cloud/internal"] != "true" || svc.Annotations["someone/else"] != "x" {
		t.Errorf("annotations %v: want cloud/internal and someone/else only", svc.Annotations)
	}

	br.Spec.Expose = &v1alpha1.BrokerExpose{Type: v1alpha1.ExposeClusterIP}
	if err := pod.Update(svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ClusterIP != "10.96.1.1" || svc.Spec.LoadBalancerSourceRanges != nil {
		t.Errorf("back at ClusterIP: %+v", svc.Spec)
	}
	for name, port := range nodePortsOf(svc) {
		if port != 0 {
			t.Errorf("port %s keeps node port %d", name, port)
		}
	}
	if !equality.Semantic.DeepEqual(svc.Annotations, map[string]string{"someone/else": "x"}) {
		t.Errorf("annotations back at ClusterIP: %v", svc.Annotations)
	}
}

// The NameServer's client Service becomes a LoadBalancer one with the spec's
// annotations, and goes back to ClusterIP.
func TestNameServerLoadBalancerService(t *testing.T) {
	ns := nameServer()
	ns.Spec.Expose = &v1alpha1.NameServerExpose{Type: v1alpha1.ExposeLoadBalancer,
		LoadBalancer: &v1alpha1.LoadBalancerSpec{Annotations: map[string]string{"cloud/internal": "true"}}}
	b := &NameServerBuilder{Instance: ns, Scheme: scheme(t)}
	svc := build(t, b.Builders())["Service/ns"].(*corev1.Service)
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Annotations["cloud/internal"] != "true" ||
		svc.Spec.Ports[0].Port != 9876 || svc.Spec.Ports[0].NodePort != 0 {
		t.Errorf("type %s annotations %v ports %+v", svc.Spec.Type, svc.Annotations, svc.Spec.Ports)
	}
	ns.Spec.Expose = nil
	if err := (&nameServerService{b}).Update(svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || len(svc.Annotations) != 0 {
		t.Errorf("back at ClusterIP: type %s annotations %v", svc.Spec.Type, svc.Annotations)
	}
}
