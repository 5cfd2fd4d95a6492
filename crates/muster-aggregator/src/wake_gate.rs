//! A future polled only once it has woken its task itself.
//!
//! `tokio::select!` polls every branch each time its task wakes, whatever woke it. A
//! cancellation token's `cancelled()` locks the token's mutex and its `Notify`'s waiter list
//! on every such poll, though it is almost never ready: a call's task wakes several times
//! for its own I/O, and a connection's for every request. [`WakeGated`] hands the future a
//! waker of its own and polls it only on the first poll and after that waker fired; other
//! polls cost an atomic swap.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

pin_project_lite::pin_project! {
    /// `inner`, polled only on the first poll and after it woke the task (see the module).
    pub(crate) struct WakeGated<F> {
        #[pin]
        inner: F,
        gate: Arc<Gate>,
        waker: Waker,
    }
}

/// The waker `inner` gets: it marks the gate open and wakes the task that polls the gate.
#[derive(Debug, Default)]
struct Gate {
    /// Whether `inner` woke since it was last polled (`true` at first: it was never polled).
    woken: AtomicBool,
    /// The waker of the task that polls [`WakeGated`].
    task: AtomicWaker,
}

impl Wake for Gate {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl<F: Future> WakeGated<F> {
    /// Gates `inner`.
    pub(crate) fn new(inner: F) -> Self {
        let gate = Arc::new(Gate {
            woken: AtomicBool::new(true),
            task: AtomicWaker::new(),
        });
        let waker = Waker::from(gate.clone());
        Self { inner, gate, waker }
    }
}

impl<F: Future> Future for WakeGated<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        // Registered before the flag is read: a wake between the two still reaches the task.
        this.gate.task.register(cx.waker());
        if !this.gate.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        this.inner.poll(&mut Context::from_waker(this.waker))
    }
}

impl<F> std::fmt::Debug for WakeGated<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WakeGated").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use super::*;

    /// Counts its polls; ready once `ready` is set, waking whoever last polled it when set.
    struct Counted {
        polls: Arc<AtomicUsize>,
        ready: Arc<AtomicBool>,
        waker: Arc<AtomicWaker>,
    }

    impl Future for Counted {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            self.waker.register(cx.waker());
            if self.ready.load(Ordering::SeqCst) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }

    #[tokio::test]
    async fn the_inner_future_is_polled_first_and_then_only_after_it_woke() {
        let polls = Arc::new(AtomicUsize::new(0));
        let ready = Arc::new(AtomicBool::new(false));
        let waker = Arc::new(AtomicWaker::new());
        let mut gated = Box::pin(WakeGated::new(Counted {
            polls: polls.clone(),
            ready: ready.clone(),
            waker: waker.clone(),
        }));
        let noop = Waker::noop();
        let mut cx = Context::from_waker(noop);
        for _ in 0..5 {
            assert!(gated.as_mut().poll(&mut cx).is_pending());
        }
        assert_eq!(
            polls.load(Ordering::SeqCst),
            1,
            "polled once until it wakes"
        );
        ready.store(true, Ordering::SeqCst);
        waker.wake();
        assert!(gated.as_mut().poll(&mut cx).is_ready());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_cancellation_reaches_a_select_whose_other_branch_keeps_waking() {
        let token = CancellationToken::new();
        let cancel = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            cancel.cancel();
        });
        let mut ticks = 0u32;
        let cancelled = WakeGated::new(token.cancelled());
        tokio::pin!(cancelled);
        let outcome = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                tokio::select! {
                    biased;
                    () = &mut cancelled => return ticks,
                    () = tokio::time::sleep(Duration::from_millis(1)) => ticks += 1,
                }
            }
        })
        .await;
        assert!(
            outcome.as_ref().is_ok_and(|ticks| *ticks > 0),
            "{outcome:?}"
        );
    }

    #[tokio::test]
    async fn an_already_cancelled_token_is_ready_at_once() {
        let token = CancellationToken::new();
        token.cancel();
        tokio::time::timeout(Duration::from_secs(5), WakeGated::new(token.cancelled()))
            .await
            .expect("ready");
    }
}
