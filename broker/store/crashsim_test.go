package store

// crash simulates a process death for in-process tests: background work
// stops and files are unmapped, but nothing is flushed, no checkpoint is
// written and the abort marker stays.
func (s *Store) crash() {
	s.closed.Store(true)
	s.putMu.Lock()
	close(s.stop)
	s.putMu.Unlock()
	s.wg.Wait()
	s.closeFiles()
}
