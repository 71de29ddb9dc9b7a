//! Locking as every part of the evaluator does it.

use std::sync::{Mutex, MutexGuard};

/// A poisoned lock means a panic mid-update elsewhere; the data is still the best we have.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
