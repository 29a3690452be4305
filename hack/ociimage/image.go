package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type options struct {
	binDir     string
	binaries   []string
	tag        string
	out        string
	entrypoint []string // default: /manager
	user       string   // default: nonroot
	title      string   // default: rocketmq-operator
	ports      []string // default: the name server's and broker's ports
}

// Platform of every image: the binaries are built for it (GOOS and GOARCH of the build).
// containerd's import filters images by platform, so a config without os and
// architecture is refused ("image might be filtered out").
var (
	imageOS   = runtime.GOOS
	imageArch = runtime.GOARCH
)

// nonroot is distroless's unprivileged user, as in the Dockerfile.
const nonroot = "65532:65532"

// build writes the image tarball and returns the image digest.
func build(opts options) (v1.Hash, error) {
	ref, err := name.NewTag(opts.tag)
	if err != nil {
		return v1.Hash{}, err
	}
	layerTar, err := binariesLayer(opts.binDir, opts.binaries)
	if err != nil {
		return v1.Hash{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return v1.Hash{}, err
	}
	entrypoint, user, title, ports := opts.entrypoint, opts.user, opts.title, opts.ports
	if len(entrypoint) == 0 {
		entrypoint = []string{"/manager"}
	}
	if user == "" {
		user = nonroot
	}
	if title == "" {
		title = "rocketmq-operator"
	}
	if ports == nil {
		ports = []string{"9876/tcp", "10911/tcp", "10912/tcp"}
	}
	exposed := map[string]struct{}{}
	for _, p := range ports {
		exposed[p] = struct{}{}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = imageOS, imageArch
	cf.Config = v1.Config{
		Entrypoint:   entrypoint,
		User:         user,
		WorkingDir:   "/",
		ExposedPorts: exposed,
		Labels:       map[string]string{"org.opencontainers.image.title": title},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return v1.Hash{}, err
	}
	img = mutate.MediaType(img, "application/vnd.docker.distribution.manifest.v2+json")
	if err := tarball.WriteToFile(opts.out, ref, img); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// binariesLayer returns a tar stream with each binary at the root, executable by all,
// with a fixed timestamp so that the same binaries give the same layer digest.
func binariesLayer(dir string, binaries []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, b := range binaries {
		data, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil {
			return nil, fmt.Errorf("binary %s: %w (run make build first)", b, err)
		}
		hdr := &tar.Header{
			Name:    b,
			Mode:    0o755,
			Size:    int64(len(data)),
			ModTime: time.Unix(0, 0),
			Format:  tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
