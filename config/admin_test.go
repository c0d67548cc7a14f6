package config

import "testing"

func TestAdminReadOnlyOpen(t *testing.T) {
	c, err := Load(Sources{})
	if err != nil || !c.Node.AdminReadOnlyOpen {
		t.Fatalf("default: %v %v", c.Node.AdminReadOnlyOpen, err)
	}
	env := func(k string) (string, bool) { return "off", k == "SHARDMESH_ADMIN_READ_ONLY_OPEN" }
	if c, err = Load(Sources{LookupEnv: env}); err != nil || c.Node.AdminReadOnlyOpen {
		t.Fatalf("environment off: %v %v", c.Node.AdminReadOnlyOpen, err)
	}
	if _, err = Load(Sources{Flags: []string{"admin-read-only-open=maybe"}}); err == nil {
		t.Fatal("a value that is not a boolean passed")
	}
	// Listed next to admin-allow.
	for i, k := range Schema {
		if k.Path == "admin-allow" && Schema[i+1].Path != "admin-read-only-open" {
			t.Errorf("admin-read-only-open is not listed after admin-allow")
		}
	}
}
