package config

import (
	"strings"
	"testing"
)

func TestStoreKeys(t *testing.T) {
	c, err := Load(Sources{})
	if err != nil || c.Store.MinFreeSpace != DefaultMinFreeSpace || c.Store.RebuildDamaged {
		t.Fatalf("defaults: %+v, %v", c.Store, err)
	}
	f := write(t, "c.yaml", "store:\n  min-free-space: 64MiB\n  rebuild-damaged: on\n")
	if c, err = Load(Sources{File: f}); err != nil || c.Store.MinFreeSpace != 64<<20 || !c.Store.RebuildDamaged {
		t.Fatalf("file: %+v, %v", c.Store, err)
	}
	env := map[string]string{"SHARDMESH_STORE_MIN_FREE_SPACE": "1GiB"}
	c, err = Load(Sources{File: f, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Flags: []string{"store.rebuild-damaged=off"}})
	if err != nil || c.Store.MinFreeSpace != 1<<30 || c.Store.RebuildDamaged {
		t.Fatalf("env and flag: %+v, %v", c.Store, err)
	}
	if c, err = Load(Sources{Flags: []string{"store.min-free-space=off"}}); err != nil || c.Store.MinFreeSpace != 0 {
		t.Fatalf("off: %+v, %v", c.Store, err)
	}
	_, err = Load(Sources{Flags: []string{"store.min-free-space=plenty"}})
	if err == nil || !strings.Contains(err.Error(), `store.min-free-space = "plenty" (flag)`) {
		t.Fatalf("bad value: %v", err)
	}
}
