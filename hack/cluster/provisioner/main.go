// Command provisioner is the test cluster's storage: a dynamic provisioner for the
// StorageClass "local-dir" (the cluster's default) that gives each claim a new directory
// under -root as a `local` PersistentVolume pinned to the node, and deletes the volume and
// its directory when the claim is gone. `local` volumes, unlike hostPath, get the pod's
// fsGroup, so the non-root broker can write its store. It runs on the host beside the
// kubelet (hack/cluster/up.sh), with the admin kubeconfig.
//
//	provisioner -kubeconfig admin.kubeconfig -root /var/tmp/rmq-k8s/volumes -node node1
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Name is the provisioner of the StorageClass, and the provisioned-by annotation of its volumes.
const Name = "rocketmq-operator.test/local-dir"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a cluster admin")
	root := flag.String("root", "", "folder holding one directory per volume")
	node := flag.String("node", "node1", "the node every volume is pinned to")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	p := &provisioner{cs: cs, root: *root, node: *node}
	log.Printf("provisioner %s: volumes under %s on node %s", Name, *root, *node)
	// A poll every second is plenty for a test cluster and needs no informer machinery.
	for ctx.Err() == nil {
		if err := p.round(ctx); err != nil && ctx.Err() == nil {
			log.Printf("round: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

type provisioner struct {
	cs   kubernetes.Interface
	root string
	node string
}

// round provisions every pending claim of ours and deletes every released volume of ours.
func (p *provisioner) round(ctx context.Context) error {
	claims, err := p.cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Status.Phase == corev1.ClaimPending && c.Spec.VolumeName == "" && c.DeletionTimestamp == nil &&
			c.Annotations["volume.kubernetes.io/storage-provisioner"] == Name {
			if err := p.provision(ctx, c); err != nil {
				log.Printf("claim %s/%s: %v", c.Namespace, c.Name, err)
			}
		}
	}
	vols, err := p.cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range vols.Items {
		v := &vols.Items[i]
		if v.Annotations["pv.kubernetes.io/provisioned-by"] != Name || v.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			continue
		}
		if v.Status.Phase == corev1.VolumeReleased || v.Status.Phase == corev1.VolumeFailed {
			if err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, v.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				log.Printf("delete volume %s: %v", v.Name, err)
				continue
			}
			if err := os.RemoveAll(filepath.Join(p.root, v.Name)); err != nil {
				log.Printf("remove %s: %v", v.Name, err)
			}
			log.Printf("deleted volume %s (claim %s/%s gone)", v.Name, v.Spec.ClaimRef.Namespace, v.Spec.ClaimRef.Name)
		}
	}
	return nil
}

// provision makes a directory and a volume bound in advance to the claim.
func (p *provisioner) provision(ctx context.Context, c *corev1.PersistentVolumeClaim) error {
	name := "pvc-" + string(c.UID)
	dir := filepath.Join(p.root, name)
	// The pod's fsGroup is applied by the kubelet; the directory starts open to the group.
	if err := os.MkdirAll(dir, 0o775); err != nil {
		return err
	}
	size := c.Spec.Resources.Requests[corev1.ResourceStorage]
	policy := corev1.PersistentVolumeReclaimDelete
	if sc := c.Spec.StorageClassName; sc != nil {
		if cls, err := p.cs.StorageV1().StorageClasses().Get(ctx, *sc, metav1.GetOptions{}); err == nil && cls.ReclaimPolicy != nil {
			policy = *cls.ReclaimPolicy
		}
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": Name}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   c.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              ptrOr(c.Spec.StorageClassName),
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname",
					Operator: corev1.NodeSelectorOpIn, Values: []string{p.node}}}}}}},
		},
	}
	if _, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("create volume: %w", err)
	}
	log.Printf("provisioned %s (%s) for claim %s/%s", name, size.String(), c.Namespace, c.Name)
	return nil
}

func ptrOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
