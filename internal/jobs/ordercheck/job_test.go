package ordercheck

import "testing"

func TestOptionsValidate(t *testing.T) {
	ok := Options{Sources: 1, Records: 1, Lanes: 1, Store: NewStore()}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.Sources = 0 },
		func(o *Options) { o.Records = -1 },
		func(o *Options) { o.Lanes = 0 },
		func(o *Options) { o.Payload = -1 },
		func(o *Options) { o.SinkRate = -1 },
		func(o *Options) { o.Store = nil },
	} {
		o := ok
		bad(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%+v validated", o)
		}
	}
}
