package deployment

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func exampleSpec() JobSpec {
	return JobSpec{
		Name: "demo-1",
		Kind: "demo",
		Args: []string{"--parallelism", "4", "--out", "/data/out"},
		Config: map[string]string{
			"execution.checkpointing.interval": "1s",
			"state.backend.type":               "hashmap",
		},
		Fingerprint: [32]byte{0: 0xab, 31: 0x01},
	}
}

func TestJobSpecJSON(t *testing.T) {
	s := exampleSpec()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	// Golden: the form job.json and the Submit RPC carry. Keys sorted,
	// fingerprint in hex.
	want := `{"name":"demo-1","kind":"demo","args":["--parallelism","4","--out","/data/out"],` +
		`"config":{"execution.checkpointing.interval":"1s","state.backend.type":"hashmap"},` +
		`"fingerprint":"ab00000000000000000000000000000000000000000000000000000000000001"}`
	if string(data) != want {
		t.Fatalf("json\n%s\nwant\n%s", data, want)
	}
	got, err := DecodeJobSpec(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip\n%+v\nwant\n%+v", got, s)
	}

	// A client's submission has no fingerprint, arguments or config yet.
	bare := JobSpec{Name: "j", Kind: "demo"}
	data, err = json.Marshal(bare)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"name":"j","kind":"demo"}` {
		t.Fatalf("bare spec json %s", data)
	}
	if got, err := DecodeJobSpec(data); err != nil || !reflect.DeepEqual(got, bare) {
		t.Fatalf("bare round trip: %+v, %v", got, err)
	}

	// Unknown keys from a newer writer are ignored.
	if _, err := DecodeJobSpec([]byte(`{"name":"j","kind":"demo","priority":3}`)); err != nil {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestDecodeJobSpecErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"name":"j","kind":"demo","fingerprint":"abc"}`, `fingerprint "abc" is not 64 hex digits`},
		{`{"name":"j","kind":"demo","fingerprint":"` + strings.Repeat("zz", 32) + `"}`, "is not 64 hex digits"},
		{`{"name":"j","kind":"demo"} {}`, "trailing data"},
		{`{"name":"j","kind":`, "decode job spec"},
		{`{"name":"a/b","kind":"demo"}`, `job name "a/b" contains a path separator`},
		{`{"name":"j"}`, "job j: kind is empty"},
		{`[]`, "decode job spec"},
	} {
		_, err := DecodeJobSpec([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeJobSpec(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestJobSpecValidate(t *testing.T) {
	if err := exampleSpec().Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(s *JobSpec)
		want   string
	}{
		{"empty name", func(s *JobSpec) { s.Name = "" }, "job name is empty"},
		{"dot", func(s *JobSpec) { s.Name = ".." }, `job name ".." is not a folder name`},
		{"slash", func(s *JobSpec) { s.Name = "a/b" }, `job name "a/b" contains a path separator`},
		{"backslash", func(s *JobSpec) { s.Name = `a\b` }, "path separator"},
		{"newline", func(s *JobSpec) { s.Name = "a\nb" }, "unprintable"},
		{"too long", func(s *JobSpec) { s.Name = strings.Repeat("x", 201) }, "201 bytes, more than 200"},
		{"bad utf-8", func(s *JobSpec) { s.Name = "a\xffb" }, "not valid UTF-8"},
		{"empty kind", func(s *JobSpec) { s.Kind = "" }, "job demo-1: kind is empty"},
		{"kind with space", func(s *JobSpec) { s.Kind = "keyed sum" }, `kind "keyed sum" has spaces`},
		{"bad arg", func(s *JobSpec) { s.Args = append(s.Args, "\xff") }, "argument 4"},
		{"empty config key", func(s *JobSpec) { s.Config[""] = "x" }, `configuration key ""`},
		{"config key with space", func(s *JobSpec) { s.Config["state backend"] = "x" }, `configuration key "state backend"`},
		{"bad config value", func(s *JobSpec) { s.Config["k"] = "\xff" }, "configuration k="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := exampleSpec()
			tc.change(&s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Names users already run locally stay valid.
	for _, name := range []string{"demo", "keyed-sum", "orders_2025.v2", "Fraud Detection", "zählung"} {
		if err := ValidateJobName(name); err != nil {
			t.Errorf("ValidateJobName(%q) = %v", name, err)
		}
	}
}
