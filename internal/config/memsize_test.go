package config

import (
	"errors"
	"testing"
)

func TestParseMemorySize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"1024", 1024, false},
		{"64mb", 64 << 20, false},
		{"64 MB", 64 << 20, false},
		{" 512 kb ", 512 << 10, false},
		{"1g", 1 << 30, false},
		{"2 gibibytes", 2 << 30, false},
		{"7 bytes", 7, false},
		{"", 0, true},
		{"mb", 0, true},
		{"1.5 gb", 0, true},
		{"-1 mb", 0, true},
		{"10 parsecs", 0, true},
		{"9999999999 tb", 0, true},
	} {
		got, err := ParseMemorySize(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseMemorySize(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestLSMKeys(t *testing.T) {
	c := New()
	if c.MemorySize(StateBackendLSMBlockCacheSize) != 64<<20 || c.MemorySize(StateBackendLSMMemtableSize) != 16<<20 || c.String(StateBackendLSMDir) != "" {
		t.Fatalf("defaults: cache %d memtable %d dir %q", c.MemorySize(StateBackendLSMBlockCacheSize), c.MemorySize(StateBackendLSMMemtableSize), c.String(StateBackendLSMDir))
	}
	// Flink's RocksDB spellings load into the lsm keys.
	for k, v := range map[string]string{
		"state.backend.rocksdb.block.cache-size": "8 mb",
		"state.backend.rocksdb.writebuffer.size": "2mb",
		"state.backend.rocksdb.localdir":         "/var/tmp/x",
		StateBackendType:                         "rocksdb",
	} {
		if err := c.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if c.MemorySize(StateBackendLSMBlockCacheSize) != 8<<20 || c.MemorySize(StateBackendLSMMemtableSize) != 2<<20 ||
		c.String(StateBackendLSMDir) != "/var/tmp/x" || c.String(StateBackendType) != BackendLSM {
		t.Fatalf("fallback keys not applied: %v", c.Entries())
	}
	for _, bad := range []struct{ key, val string }{
		{StateBackendLSMMemtableSize, "100 kb"},
		{StateBackendLSMBlockCacheSize, "lots"},
	} {
		if err := c.Set(bad.key, bad.val); !errors.Is(err, ErrBadValue) {
			t.Errorf("Set(%s, %q) = %v, want ErrBadValue", bad.key, bad.val, err)
		}
	}
}
