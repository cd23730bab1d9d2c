// Command nullbinder binds every pending pod of a scheduler name to the cluster's nodes in turn,
// deciding nothing: no filters, no scores, no resources counted. It is the benchmark's measure of
// what the API server can take: the rate at which a client-go program binds pods and writes one
// Scheduled event per binding, as a scheduler that cost nothing would.
//
// An informer lists and watches the pods without a node (the field selector kube-scheduler's own
// informer uses); each pending pod's key goes on a work queue that --workers goroutines drain: the
// next node of the ring (nodes from an informer, in the order they were added), a Binding through
// the pods/binding subresource, then the event through the events.k8s.io broadcaster
// kube-scheduler writes its events with (reason Scheduled, the same message). A failed binding
// is retried with the queue's rate limiter; a pod deleted meanwhile is dropped.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
)

// ring is the nodes in the order they were added; next() walks it round-robin.
type ring struct {
	mu    sync.RWMutex
	names []string
	index map[string]int
	turn  atomic.Uint64
}

func (r *ring) add(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.index[name]; ok {
		return
	}
	r.index[name] = len(r.names)
	r.names = append(r.names, name)
}

func (r *ring) remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.index[name]
	if !ok {
		return
	}
	last := len(r.names) - 1
	r.names[i] = r.names[last]
	r.index[r.names[i]] = i
	r.names = r.names[:last]
	delete(r.index, name)
}

func (r *ring) next() (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.names) == 0 {
		return "", false
	}
	return r.names[(r.turn.Add(1)-1)%uint64(len(r.names))], true
}

func nodeName(obj interface{}) string {
	switch o := obj.(type) {
	case *v1.Node:
		return o.Name
	case cache.DeletedFinalStateUnknown:
		if n, ok := o.Obj.(*v1.Node); ok {
			return n.Name
		}
	}
	return ""
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path of the kubeconfig to reach the API server with (required)")
	workers := flag.Int("workers", 64, "bindings in flight at once")
	schedulerName := flag.String("scheduler-name", v1.DefaultSchedulerName, "bind the pending pods that name this scheduler")
	qps := flag.Float64("qps", 5000, "client-side rate limit (requests per second)")
	burst := flag.Int("burst", 5000, "client-side burst")
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "nullbinder: --kubeconfig is required")
		os.Exit(2)
	}
	if *workers < 1 {
		fmt.Fprintf(os.Stderr, "nullbinder: --workers must be at least 1, got %d\n", *workers)
		os.Exit(2)
	}
	started := time.Now()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("nullbinder: kubeconfig %s: %v", *kubeconfig, err)
	}
	config.QPS, config.Burst = float32(*qps), *burst
	// Protobuf for the built-in kinds, as kube-scheduler talks to the API server.
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	config.UserAgent = "nullbinder"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		log.Fatalf("nullbinder: client: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, *schedulerName)

	nodes := &ring{index: map[string]int{}}
	nodeFactory := informers.NewSharedInformerFactory(client, 0)
	nodeHandler, err := nodeFactory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { nodes.add(nodeName(obj)) },
		DeleteFunc: func(obj interface{}) { nodes.remove(nodeName(obj)) },
	})
	if err != nil {
		log.Fatalf("nullbinder: node handler: %v", err)
	}

	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = "spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"
		}))
	pods := podFactory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj interface{}) bool {
			p, ok := obj.(*v1.Pod)
			return ok && p.Spec.SchedulerName == *schedulerName && p.DeletionTimestamp == nil
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) {
				if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
					queue.Add(key)
				}
			},
		},
	}); err != nil {
		log.Fatalf("nullbinder: pod handler: %v", err)
	}

	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	nodeFactory.WaitForCacheSync(ctx.Done())
	podFactory.WaitForCacheSync(ctx.Done())
	// The informer's store is synced before its handler has seen every node: wait for the
	// handler too, or the first bindings go round a ring that lacks some nodes.
	cache.WaitForCacheSync(ctx.Done(), nodeHandler.HasSynced)
	log.Printf("nullbinder: caches synced %.3fs after start; %d workers", time.Since(started).Seconds(), *workers)

	var bound atomic.Int64
	bind := func(key string) {
		obj, exists, err := pods.GetIndexer().GetByKey(key)
		if err != nil || !exists {
			queue.Forget(key) // bound (gone from the unscheduled pods) or deleted
			return
		}
		pod := obj.(*v1.Pod)
		node, ok := nodes.next()
		if !ok {
			queue.AddAfter(key, 100*time.Millisecond)
			return
		}
		binding := &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: node},
		}
		if err := client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				queue.Forget(key) // deleted, or bound by someone else
				return
			}
			log.Printf("nullbinder: binding %s to %s: %v", key, node, err)
			queue.AddRateLimited(key)
			return
		}
		queue.Forget(key)
		recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding",
			"Successfully assigned %v/%v to %v", pod.Namespace, pod.Name, node)
		if bound.Add(1) == 1 {
			log.Printf("nullbinder: first binding %.3fs after start", time.Since(started).Seconds())
		}
	}
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, quit := queue.Get()
				if quit {
					return
				}
				bind(key)
				queue.Done(key)
			}
		}()
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	log.Printf("nullbinder: %d pods bound", bound.Load())
}
