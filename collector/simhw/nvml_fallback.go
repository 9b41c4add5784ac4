package simhw

import (
	"reflect"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// go-nvml's moq mocks panic when a method whose func field is nil is called. The
// simulator implements the methods the agent uses directly on Server and Device;
// the helpers here give every remaining func field an answer, so that code probing
// an API the simulation does not model sees what it would see on a GPU without
// the feature (ERROR_NOT_SUPPORTED) instead of a panic.

var (
	returnType = reflect.TypeFor[nvml.Return]()
	deviceType = reflect.TypeFor[nvml.Device]()
)

// answerWith builds the results of a function of type ft: ret for every
// nvml.Return result, zero values for the rest.
func answerWith(ft reflect.Type, ret nvml.Return) []reflect.Value {
	out := make([]reflect.Value, ft.NumOut())
	for i := range out {
		if ft.Out(i) == returnType {
			out[i] = reflect.ValueOf(ret)
		} else {
			out[i] = reflect.Zero(ft.Out(i))
		}
	}
	return out
}

// fillFuncs sets each nil XxxFunc field of the moq struct m points to with the
// function answer returns for it.
func fillFuncs(m any, answer func(method string, ft reflect.Type) func([]reflect.Value) []reflect.Value) {
	v := reflect.ValueOf(m).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || f.Type.Kind() != reflect.Func || !strings.HasSuffix(f.Name, "Func") {
			continue
		}
		if !v.Field(i).IsNil() {
			continue
		}
		method := strings.TrimSuffix(f.Name, "Func")
		v.Field(i).Set(reflect.MakeFunc(f.Type, answer(method, f.Type)))
	}
}

// fillDevice makes every method d does not implement answer ERROR_NOT_SUPPORTED, or
// ERROR_UNINITIALIZED / ERROR_GPU_IS_LOST when that is what any call would get.
func fillDevice(m *mock.Device, d *Device) {
	fillFuncs(m, func(_ string, ft reflect.Type) func([]reflect.Value) []reflect.Value {
		return func([]reflect.Value) []reflect.Value {
			d.node().mu.RLock()
			r := d.check(false)
			d.node().mu.RUnlock()
			if r == nvml.SUCCESS {
				r = nvml.ERROR_NOT_SUPPORTED
			}
			return answerWith(ft, r)
		}
	})
}

// fillInterface makes every nvml.Interface method s does not implement either
// delegate to the device (DeviceXxx(dev, args…) → dev.Xxx(args…), which is all the
// real library does for those) or answer ERROR_NOT_SUPPORTED.
func fillInterface(m *mock.Interface, s *Server) {
	fillFuncs(m, func(method string, ft reflect.Type) func([]reflect.Value) []reflect.Value {
		if name, ok := strings.CutPrefix(method, "Device"); ok && delegable(name, ft) {
			return func(args []reflect.Value) []reflect.Value {
				if args[0].IsNil() {
					return answerWith(ft, nvml.ERROR_INVALID_ARGUMENT)
				}
				return args[0].MethodByName(name).Call(args[1:])
			}
		}
		return func([]reflect.Value) []reflect.Value {
			r := s.ready()
			if r == nvml.SUCCESS {
				r = nvml.ERROR_NOT_SUPPORTED
			}
			return answerWith(ft, r)
		}
	})
}

// delegable reports whether an Interface method of type ft, named Device+name,
// takes a Device first and matches nvml.Device's method name in the rest.
func delegable(name string, ft reflect.Type) bool {
	if ft.NumIn() == 0 || ft.In(0) != deviceType {
		return false
	}
	m, ok := deviceType.MethodByName(name)
	if !ok {
		return false
	}
	mt := m.Type
	if mt.NumIn() != ft.NumIn()-1 || mt.NumOut() != ft.NumOut() {
		return false
	}
	for i := 0; i < mt.NumIn(); i++ {
		if mt.In(i) != ft.In(i+1) {
			return false
		}
	}
	for i := 0; i < mt.NumOut(); i++ {
		if mt.Out(i) != ft.Out(i) {
			return false
		}
	}
	return true
}
