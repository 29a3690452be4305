package resource

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

func broker() *v1alpha1.Broker {
	return &v1alpha1.Broker{
		ObjectMeta: metav1.ObjectMeta{Name: "rmq", Namespace: "mq", UID: "u2"},
		Spec: v1alpha1.BrokerSpec{
			ContainerSpec:    v1alpha1.ContainerSpec{Image: "img:1"},
			ClusterName:      "C1",
			Groups:           3,
			ReplicasPerGroup: 3,
			BrokerRole:       v1alpha1.SyncMaster,
			FlushDiskType:    v1alpha1.SyncFlush,
			ListenPort:       10911,
			Config:           map[string]string{"deleteWhen": "04", "brokerName": "ignored"},
			Storage:          v1alpha1.BrokerStorage{WhenScaled: v1alpha1.ReclaimDelete},
		},
	}
}

func TestBrokerObjectsPerGroup(t *testing.T) {
	br := broker()
	objs := build(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t), NameServerAddress: "n:9876"}).Builders())
	if len(objs) != 1+3*(5+3) {
		t.Fatalf("want the namesrv ConfigMap and 5 objects plus 3 pod Services per group, got %d", len(objs))
	}
	for _, g := range []string{"a", "b", "c"} {
		for _, k := range []string{"StatefulSet/rmq-broker-", "ConfigMap/rmq-broker-", "PodDisruptionBudget/rmq-broker-"} {
			suffix := map[string]string{"ConfigMap/rmq-broker-": "-config"}[k]
			if _, ok := objs[k+g+suffix]; !ok {
				t.Errorf("missing %s%s%s", k, g, suffix)
			}
		}
		if _, ok := objs["Service/rmq-broker-"+g+"-headless"]; !ok {
			t.Errorf("missing headless service of group %s", g)
		}
	}
	if objs["ConfigMap/rmq-namesrv"].(*corev1.ConfigMap).Data[NamesrvAddrKey] != "n:9876" {
		t.Error("namesrv ConfigMap lacks the address")
	}
	sts := objs["StatefulSet/rmq-broker-b"].(*appsv1.StatefulSet)
	if *sts.Spec.Replicas != 3 || sts.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement {
		t.Errorf("replicas/policy = %d/%s", *sts.Spec.Replicas, sts.Spec.PodManagementPolicy)
	}
	if sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType ||
		sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("retention = %+v", sts.Spec.PersistentVolumeClaimRetentionPolicy)
	}
	if q := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "20Gi" {
		t.Errorf("default claim size = %s", q.String())
	}
}

func TestBrokerPodConf(t *testing.T) {
	br := broker()
	master := BrokerPodConf(br, 1, 0)
	for _, want := range []string{"brokerClusterName=C1\n", "brokerName=broker-b\n", "brokerId=0\n",
		"brokerRole=SYNC_MASTER\n", "flushDiskType=SYNC_FLUSH\n", "deleteWhen=04\n", "listenPort=10911\n"} {
		if !strings.Contains(master, want) {
			t.Errorf("master conf lacks %q:\n%s", want, master)
		}
	}
	if strings.Contains(master, "ignored") || strings.Contains(master, "namesrvAddr") {
		t.Errorf("operator keys must win and namesrvAddr stay out:\n%s", master)
	}
	slave := BrokerPodConf(br, 1, 2)
	if !strings.Contains(slave, "brokerId=2\nbrokerRole=SLAVE\n") {
		t.Errorf("slave conf:\n%s", slave)
	}
	if !strings.Contains(slave, "slaveReadEnable=true\n") {
		t.Errorf("slaves serve reads by default:\n%s", slave)
	}
	br.Spec.Config["slaveReadEnable"] = "false"
	if c := BrokerPodConf(br, 1, 2); !strings.Contains(c, "slaveReadEnable=false\n") || strings.Contains(c, "slaveReadEnable=true") {
		t.Errorf("spec.config overrides an operator default:\n%s", c)
	}
}

func TestBrokerConfigHash(t *testing.T) {
	br := broker()
	h := BrokerConfigHash(br, 0)
	br.Spec.ReplicasPerGroup = 5
	br.Spec.Image = "img:2"
	if BrokerConfigHash(br, 0) != h {
		t.Error("replicas and image must not change the config hash")
	}
	br.Spec.BrokerRole = v1alpha1.AsyncMaster
	if BrokerConfigHash(br, 0) == h {
		t.Error("the master role must change the hash")
	}
	h = BrokerConfigHash(br, 0)
	br.Spec.Config["deleteWhen"] = "05"
	if BrokerConfigHash(br, 0) == h {
		t.Error("a config key must change the hash")
	}
	if BrokerConfigHash(br, 0) == BrokerConfigHash(br, 1) {
		t.Error("groups differ by brokerName, so do their hashes")
	}
}

func TestBrokerNamesAndAddresses(t *testing.T) {
	br := broker()
	if BrokerName(0) != "broker-a" || BrokerName(25) != "broker-z" {
		t.Error(BrokerName(0), BrokerName(25))
	}
	if got := BrokerMemberAddress(br, 2, 1); got != "rmq-broker-c-1.rmq-broker-c-headless.mq.svc:10911" {
		t.Error(got)
	}
}

func TestBrokerACL(t *testing.T) {
	br := broker()
	br.Spec.Config["aclEnable"] = "false" // refused by the API; dropped if an old object has it
	plain := BrokerPodConf(br, 0, 0)
	if strings.Contains(plain, "acl") {
		t.Errorf("no spec.acl, no ACL keys:\n%s", plain)
	}
	sts := buildSTS(t, br, "StatefulSet/rmq-broker-a")
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "acl" {
			t.Error("no spec.acl, no acl volume")
		}
	}
	offHash := BrokerConfigHash(br, 0)

	br.Spec.ACL = &v1alpha1.BrokerACL{SecretName: "rmq-acl", OperatorCredentialsSecretName: "op"}
	conf := BrokerPodConf(br, 0, 0)
	for _, want := range []string{"aclEnable=true\n", "aclPlainFile=/etc/rocketmq/acl/plain_acl.yml\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "aclEnable=false") {
		t.Errorf("spec.config must not switch ACL:\n%s", conf)
	}
	onHash := BrokerConfigHash(br, 0)
	if onHash == offHash {
		t.Error("turning ACL on must change the config hash (and roll the pods)")
	}

	sts = buildSTS(t, br, "StatefulSet/rmq-broker-a")
	spec := sts.Spec.Template.Spec
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == "acl" {
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil {
		t.Fatalf("no secret volume named acl: %+v", spec.Volumes)
	}
	if vol.Secret.SecretName != "rmq-acl" || len(vol.Secret.Items) != 1 ||
		vol.Secret.Items[0] != (corev1.KeyToPath{Key: "plain_acl.yml", Path: "plain_acl.yml"}) ||
		vol.Secret.Optional == nil || *vol.Secret.Optional || *vol.Secret.DefaultMode != 0o444 {
		t.Errorf("acl volume = %+v", vol.Secret)
	}
	var mount *corev1.VolumeMount
	for i, m := range spec.Containers[0].VolumeMounts {
		if m.Name == "acl" {
			mount = &spec.Containers[0].VolumeMounts[i]
		}
	}
	// A subPath mount would never see the kubelet's updates of the Secret.
	if mount == nil || mount.MountPath != "/etc/rocketmq/acl" || !mount.ReadOnly || mount.SubPath != "" {
		t.Errorf("acl mount = %+v", mount)
	}

	// The operator's credentials are the operator's business: pods do not change.
	br.Spec.ACL.OperatorCredentialsSecretName = "other"
	if again := buildSTS(t, br, "StatefulSet/rmq-broker-a"); !equality.Semantic.DeepEqual(again.Spec.Template, sts.Spec.Template) {
		t.Error("operatorCredentialsSecretName changed the pod template")
	}
	// Another key is another file.
	br.Spec.ACL.Key = "rules.yaml"
	if !strings.Contains(BrokerPodConf(br, 0, 0), "aclPlainFile=/etc/rocketmq/acl/rules.yaml\n") {
		t.Errorf("custom key:\n%s", BrokerPodConf(br, 0, 0))
	}
	if BrokerConfigHash(br, 0) == onHash {
		t.Error("another file path must change the hash")
	}
	sts = buildSTS(t, br, "StatefulSet/rmq-broker-a")
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "acl" && v.Secret.Items[0] != (corev1.KeyToPath{Key: "rules.yaml", Path: "rules.yaml"}) {
			t.Errorf("custom key volume: %+v", v.Secret.Items)
		}
	}
	if BrokerACLFile(br) != "/etc/rocketmq/acl/rules.yaml" {
		t.Error(BrokerACLFile(br))
	}
}

func buildSTS(t *testing.T, br *v1alpha1.Broker, key string) *appsv1.StatefulSet {
	t.Helper()
	objs := build(t, (&BrokerBuilder{Instance: br, Scheme: scheme(t), NameServerAddress: "n:9876"}).Builders())
	return objs[key].(*appsv1.StatefulSet)
}

func TestBrokerGroupIndex(t *testing.T) {
	for in, want := range map[string]int32{"broker-a": 0, "broker-c": 2, "broker-z": 25} {
		if got, ok := BrokerGroupIndex(in); !ok || got != want {
			t.Errorf("%s: %d %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", "broker-", "broker-A", "broker-aa", "other-a"} {
		if _, ok := BrokerGroupIndex(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The names a scale-in deletes are the names the builders make.
func TestBrokerGroupObjectsAreTheBuiltChildren(t *testing.T) {
	br := &v1alpha1.Broker{ObjectMeta: metav1.ObjectMeta{Name: "rmq", Namespace: "ns"}}
	br.Spec.Groups, br.Spec.ReplicasPerGroup = 2, 2
	built := map[string]bool{}
	for _, b := range (&BrokerBuilder{Instance: br}).Builders() {
		obj, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		built[fmt.Sprintf("%T/%s", obj, obj.GetName())] = true
	}
	for i := range br.Spec.Groups {
		for _, obj := range BrokerGroupObjects(br, i) {
			if k := fmt.Sprintf("%T/%s", obj, obj.GetName()); !built[k] || obj.GetNamespace() != "ns" {
				t.Errorf("group %d: %s (namespace %q) is not a built child", i, k, obj.GetNamespace())
			}
		}
	}
}

// TestSlavesFollowTheMastersName: a slave's haMasterAddress is the group's HA Service
// (a ClusterIP kept across the master's restarts), by DNS name. Learning it from the next
// registration left slaves replicating nothing for 30 s.
func TestSlavesFollowTheMastersName(t *testing.T) {
	br := broker()
	br.Spec.Config["haMasterAddress"] = "10.0.0.9:1" // refused by the API; ours wins
	want := "haMasterAddress=rmq-broker-b-ha.mq.svc:10912\n"
	if c := BrokerPodConf(br, 1, 1); !strings.Contains(c, want) {
		t.Errorf("slave conf lacks %q:\n%s", want, c)
	}
}
