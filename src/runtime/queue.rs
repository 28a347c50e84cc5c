//! One run at a time per session (a second would overwrite the first's buffers): later runs
//! wait for their turn, in call order, instead of failing.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use futures_channel::oneshot;

/// One run at a time per session (a second would overwrite the first's buffers): later runs
/// wait for their turn, in call order, instead of failing.
#[derive(Default)]
pub(crate) struct RunQueue {
    busy: Cell<bool>,
    waiting: RefCell<VecDeque<oneshot::Sender<()>>>,
}

impl RunQueue {
    /// Resolves when it is this caller's turn; the turn ends when the returned guard drops.
    pub(crate) async fn enter(self: Rc<Self>) -> Turn {
        if self.busy.replace(true) {
            let (tx, rx) = oneshot::channel();
            self.waiting.borrow_mut().push_back(tx);
            // The run before hands the turn over (`busy` stays set); the sender is only
            // dropped unsent with the queue itself.
            let _ = rx.await;
        }
        Turn(self)
    }
}

/// A run's turn: passes it to the next waiting run (skipping abandoned waits) when dropped,
/// however the run ended.
pub(crate) struct Turn(Rc<RunQueue>);

impl Drop for Turn {
    fn drop(&mut self) {
        loop {
            let next = self.0.waiting.borrow_mut().pop_front();
            match next {
                Some(tx) => {
                    if tx.send(()).is_ok() {
                        return;
                    }
                }
                None => {
                    self.0.busy.set(false);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    /// Runs wait their turn in call order; an abandoned wait is skipped; the queue is free
    /// again after the last turn.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn runs_wait_their_turn_in_order() {
        let mut cx = Context::from_waker(Waker::noop());
        let q = Rc::new(RunQueue::default());
        let Poll::Ready(first) = pin!(q.clone().enter()).as_mut().poll(&mut cx) else {
            panic!("a free queue makes the caller wait");
        };
        let mut second = Box::pin(q.clone().enter());
        let mut abandoned = Box::pin(q.clone().enter());
        let mut third = Box::pin(q.clone().enter());
        assert!(second.as_mut().poll(&mut cx).is_pending());
        assert!(abandoned.as_mut().poll(&mut cx).is_pending());
        assert!(third.as_mut().poll(&mut cx).is_pending());
        drop(abandoned);
        drop(first);
        let Poll::Ready(second) = second.as_mut().poll(&mut cx) else {
            panic!("the second run did not get the turn");
        };
        assert!(third.as_mut().poll(&mut cx).is_pending());
        drop(second);
        let Poll::Ready(third) = third.as_mut().poll(&mut cx) else {
            panic!("the abandoned wait was not skipped");
        };
        drop(third);
        assert!(!q.busy.get());
    }
}
