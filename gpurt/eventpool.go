package gpurt

// EventPool is one device's timing events for a series of marks. The events of a series stay valid until the
// series is read; the first Take after that (read true) starts a new series that reuses every event, so that an
// endless run allocates no more than its longest series needs.
type EventPool struct {
	free, used []Event
}

// Take returns an event for the next mark of the series. Where none is free, create makes one (in the device's
// context, which the caller knows how to make current).
func (p *EventPool) Take(read bool, create func() (Event, error)) (Event, error) {
	if read {
		p.free, p.used = append(p.free, p.used...), p.used[:0]
	}
	var e Event
	if n := len(p.free); n > 0 {
		e, p.free = p.free[n-1], p.free[:n-1]
	} else {
		var err error
		if e, err = create(); err != nil {
			return 0, err
		}
	}
	p.used = append(p.used, e)
	return e, nil
}

// Len is how many events the pool holds.
func (p *EventPool) Len() int { return len(p.free) + len(p.used) }

// Destroy destroys every event (in the device's context) and empties the pool; it returns the first error.
func (p *EventPool) Destroy() error {
	var first error
	for _, e := range append(p.free, p.used...) {
		if err := e.Destroy(); err != nil && first == nil {
			first = err
		}
	}
	p.free, p.used = nil, nil
	return first
}
