package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func fakeBinaries(t *testing.T) (dir string, names []string) {
	dir = t.TempDir()
	names = []string{"manager", "namesrv", "broker"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!binary "+n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, names
}

func TestBuildWritesLoadableImage(t *testing.T) {
	dir, names := fakeBinaries(t)
	out := filepath.Join(t.TempDir(), "image.tar")
	digest, err := build(options{binDir: dir, binaries: names, tag: "example.com/rmq:test", out: out})
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("example.com/rmq:test")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("tarball does not load: %v", err)
	}
	if got, _ := img.Digest(); got != digest {
		t.Errorf("digest read back %s, built %s", got, digest)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// containerd's import drops images whose platform it cannot match.
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("os/architecture = %q/%q, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/manager"}) || cfg.Config.User != nonroot {
		t.Errorf("entrypoint %v user %q, want [/manager] %q", cfg.Config.Entrypoint, cfg.Config.User, nonroot)
	}
	for _, port := range []string{"9876/tcp", "10911/tcp", "10912/tcp"} {
		if _, ok := cfg.Config.ExposedPorts[port]; !ok {
			t.Errorf("port %s not exposed", port)
		}
	}

	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, err %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	found := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Mode&0o111 != 0o111 {
			t.Errorf("%s mode %o is not executable by all", hdr.Name, hdr.Mode)
		}
		data, _ := io.ReadAll(tr)
		found[hdr.Name] = string(data)
	}
	for _, n := range names {
		if found[n] != "#!binary "+n {
			t.Errorf("layer holds %q for %s", found[n], n)
		}
	}
}

func TestBuildIsReproducible(t *testing.T) {
	dir, names := fakeBinaries(t)
	first, err := build(options{binDir: dir, binaries: names, tag: "rmq:test", out: filepath.Join(t.TempDir(), "a.tar")})
	if err != nil {
		t.Fatal(err)
	}
	second, err := build(options{binDir: dir, binaries: names, tag: "rmq:test", out: filepath.Join(t.TempDir(), "b.tar")})
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("same binaries gave digests %s and %s", first, second)
	}
}

func TestBuildNamesAMissingBinary(t *testing.T) {
	dir, _ := fakeBinaries(t)
	_, err := build(options{binDir: dir, binaries: []string{"manager", "absent"}, tag: "rmq:test", out: filepath.Join(t.TempDir(), "x.tar")})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want a not-exist error naming the binary", err)
	}
}
