package remoting

import "sync"

// Pool is a fixed set of workers with a bounded queue, so that one kind of request
// (say, pulls) cannot starve another (say, sends) and overload is refused, not queued
// without bound.
type Pool struct {
	name     string
	jobs     chan func()
	stopOnce sync.Once
	wg       sync.WaitGroup
	mu       sync.RWMutex // guards sends on jobs against stop closing it
	stopped  bool
}

func newPool(name string, workers, queue int) *Pool {
	if workers < 1 {
		workers = 1
	}
	if queue < 0 {
		queue = 0
	}
	p := &Pool{name: name, jobs: make(chan func(), queue)}
	p.wg.Add(workers)
	for range workers {
		go p.work()
	}
	return p
}

func (p *Pool) work() {
	defer p.wg.Done()
	for job := range p.jobs {
		job()
	}
}

// submit queues job, or reports false when the queue is full or the pool stopped.
func (p *Pool) submit(job func()) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.stopped {
		return false
	}
	select {
	case p.jobs <- job:
		return true
	default:
		return false
	}
}

// stop lets the workers finish what is queued, then ends them.
func (p *Pool) stop() {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.stopped = true
		close(p.jobs)
		p.mu.Unlock()
		p.wg.Wait()
	})
}
