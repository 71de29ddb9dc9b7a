//! How the launcher's steps fail: each says which step, and why.

/// A setup step that failed.
#[derive(Debug)]
pub(crate) struct Failure(pub(crate) String);

pub(crate) type Setup<T> = Result<T, Failure>;

pub(crate) fn fail<E: std::fmt::Display>(
    step: impl std::fmt::Display,
) -> impl FnOnce(E) -> Failure {
    move |e| Failure(format!("{step}: {e}"))
}
