package controllers

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// renderUsersACL keeps, for a Broker whose spec.acl names no secretName, the operator's
// own admin account (unless spec.acl names one) and the plain_acl.yml rendered from the
// Broker's Users: the operator's account first, then every User userVerdict admits, oldest
// first, and for a User that is wrong now the account it had before. It runs before the
// StatefulSets are applied, so the Secret the pods mount exists when they start. Only API
// errors fail it: a bad User is that User's condition, never the Broker's.
func (r *BrokerReconciler) renderUsersACL(ctx context.Context, br *v1alpha1.Broker, _ *brokerState) (time.Duration, error) {
	if !br.Spec.ACL.UsersMode() {
		return 0, nil
	}
	reader := r.apiReader()
	if br.Spec.ACL.OperatorCredentialsSecretName == "" {
		created, err := applySecret(ctx, reader, r.Client, br, &resource.OperatorCredentialsSecret{Instance: br, Scheme: r.Scheme})
		if err != nil {
			return 0, fmt.Errorf("the operator's credentials Secret: %w", err)
		}
		if created {
			r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "OperatorAccountCreated", "RenderACL",
				"made the operator's admin account %s in Secret %s", resource.OperatorAccessKey, resource.GeneratedCredentialsSecretName(br))
		}
	}
	op, haveOp, err := operatorCredentials(ctx, reader, br)
	if err != nil {
		return 0, err
	}
	prev, err := r.renderedAccounts(ctx, br)
	if err != nil {
		return 0, err
	}
	users, err := usersOf(ctx, r.Client, br)
	if err != nil {
		return 0, err
	}
	file := resource.PlainACL{GlobalWhiteRemoteAddresses: br.Spec.ACL.GlobalWhiteRemoteAddresses}
	claimed := map[string]bool{}
	for _, u := range users {
		claimed[u.Spec.AccessKey] = true
	}
	if haveOp {
		file.Accounts = append(file.Accounts, resource.ACLAccount{AccessKey: op.AccessKey, SecretKey: op.SecretKey, Admin: true})
	} else {
		// The credentials Secret is missing: keep the accounts no User claims (the
		// operator's from before), so the brokers go on accepting its calls once it is back.
		for _, a := range prev.list {
			if !claimed[a.AccessKey] {
				file.Accounts = append(file.Accounts, a)
			}
		}
		log.FromContext(ctx).Info("the operator's credentials Secret is missing: its account in plain_acl.yml is kept as it was",
			"secret", resource.OperatorCredentialsSecretName(br))
	}
	inFile := map[string]bool{}
	for _, a := range file.Accounts {
		inFile[a.AccessKey] = true
	}
	for i := range users {
		u := &users[i]
		v, err := decideUser(ctx, reader, u, users, op.AccessKey)
		if err != nil {
			return 0, err
		}
		a := v.account
		// The account this User had in the file (its status records what was rendered
		// from it) stays while its Secret or account is wrong.
		if a == nil && v.keepOld && u.Status.AccessKey == u.Spec.AccessKey {
			if old, ok := prev.byKey[u.Spec.AccessKey]; ok {
				a = &old
			}
		}
		if a != nil && !inFile[a.AccessKey] {
			file.Accounts = append(file.Accounts, *a)
			inFile[a.AccessKey] = true
		}
	}
	content, err := resource.RenderPlainACL(br, file)
	if err != nil {
		return 0, err
	}
	if prev.exists && bytes.Equal(prev.content, content) {
		return 0, nil
	}
	if _, err := applySecret(ctx, reader, r.Client, br, &resource.UsersACLSecret{Instance: br, Scheme: r.Scheme, Content: content}); err != nil {
		return 0, fmt.Errorf("the rendered plain_acl.yml: %w", err)
	}
	r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "ACLRendered", "RenderACL",
		"plain_acl.yml in Secret %s now has %d account(s) (the operator's and %d User(s)); the brokers re-read it once the kubelet refreshes the mount",
		resource.UsersACLSecretName(br), len(file.Accounts), countUsers(file.Accounts, claimed))
	return 0, nil
}

func countUsers(accounts []resource.ACLAccount, claimed map[string]bool) int {
	n := 0
	for _, a := range accounts {
		if claimed[a.AccessKey] {
			n++
		}
	}
	return n
}

// rendered is the plain_acl.yml the operator wrote last.
type rendered struct {
	exists  bool
	content []byte
	list    []resource.ACLAccount
	byKey   map[string]resource.ACLAccount
}

func (r *BrokerReconciler) renderedAccounts(ctx context.Context, br *v1alpha1.Broker) (rendered, error) {
	out := rendered{byKey: map[string]resource.ACLAccount{}}
	s := &corev1.Secret{}
	err := r.apiReader().Get(ctx, client.ObjectKey{Namespace: br.Namespace, Name: resource.UsersACLSecretName(br)}, s)
	if apierrors.IsNotFound(err) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.exists, out.content = true, s.Data[resource.ACLKey(br.Spec.ACL)]
	f, err := resource.ParsePlainACL(out.content)
	if err != nil {
		// Not ours any more (edited by hand): render afresh.
		return out, nil
	}
	out.list = f.Accounts
	for _, a := range f.Accounts {
		out.byKey[a.AccessKey] = a
	}
	return out, nil
}

func (r *BrokerReconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// brokersOfUser maps a User to its Broker.
func brokersOfUser(_ context.Context, o client.Object) []reconcile.Request {
	u, ok := o.(*v1alpha1.User)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: u.Namespace, Name: u.Spec.BrokerRef.Name}}}
}

// brokersOfUserSecret maps a Secret to the Brokers of the Users whose secretKeyRef names it.
func brokersOfUserSecret(ctx context.Context, c client.Reader, secret client.Object) []reconcile.Request {
	var list v1alpha1.UserList
	if err := c.List(ctx, &list, client.InNamespace(secret.GetNamespace())); err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []reconcile.Request
	for _, u := range list.Items {
		if u.Spec.SecretKeyRef.Name == secret.GetName() && !seen[u.Spec.BrokerRef.Name] {
			seen[u.Spec.BrokerRef.Name] = true
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: u.Namespace, Name: u.Spec.BrokerRef.Name}})
		}
	}
	return out
}
