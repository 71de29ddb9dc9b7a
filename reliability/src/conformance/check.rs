//! What a case concludes, and the comparisons every case makes.

use std::fmt::{Debug, Display};

use tonic::{Code, Status};

/// Why a case did not pass.
#[derive(Debug)]
pub(crate) enum Problem {
    /// The evaluator did something other than what the protocol says.
    Fail { expected: String, got: String },
    /// The case cannot run against this evaluator (no such task, no harness channel).
    Skip(String),
}

impl Problem {
    pub(crate) fn fail(expected: impl Display, got: impl Display) -> Problem {
        Problem::Fail {
            expected: expected.to_string(),
            got: clip(&got.to_string()),
        }
    }
}

pub(crate) type Outcome = Result<(), Problem>;

/// Error messages are echoed into the report; a long one is cut, saying how long it was.
fn clip(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        None => text.to_string(),
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
    }
}

/// `INVALID_ARGUMENT`, as the gRPC specification spells codes.
pub(crate) fn code_name(code: Code) -> String {
    let camel = format!("{code:?}");
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

fn describe(status: &Status) -> String {
    format!("{} ({})", code_name(status.code()), status.message())
}

/// A call that must fail with `code`.
pub(crate) fn expect_code<T>(what: &str, answer: Result<T, Status>, code: Code) -> Outcome {
    match answer {
        Err(status) if status.code() == code => Ok(()),
        Err(status) => Err(Problem::fail(
            format!("{what} to answer {}", code_name(code)),
            describe(&status),
        )),
        Ok(_) => Err(Problem::fail(
            format!("{what} to answer {}", code_name(code)),
            "OK",
        )),
    }
}

/// A call that must succeed; its answer.
pub(crate) fn expect_ok<T>(
    what: &str,
    answer: Result<tonic::Response<T>, Status>,
) -> Result<T, Problem> {
    answer
        .map(tonic::Response::into_inner)
        .map_err(|status| Problem::fail(format!("{what} to succeed"), describe(&status)))
}

/// Two values that must be equal.
pub(crate) fn expect_eq<T: PartialEq + Debug>(what: &str, expected: T, got: T) -> Outcome {
    if expected == got {
        Ok(())
    } else {
        Err(Problem::fail(
            format!("{what} {expected:?}"),
            format!("{got:?}"),
        ))
    }
}

/// A condition that must hold.
pub(crate) fn expect(condition: bool, expected: impl Display, got: impl Display) -> Outcome {
    if condition {
        Ok(())
    } else {
        Err(Problem::fail(expected, got))
    }
}

/// Turns any other error into a failure naming the step it interrupted.
pub(crate) trait During<T> {
    fn during(self, what: &str) -> Result<T, Problem>;
}

impl<T, E: Display> During<T> for Result<T, E> {
    fn during(self, what: &str) -> Result<T, Problem> {
        self.map_err(|e| Problem::fail(format!("{what} to succeed"), e))
    }
}

/// Whether `id` is `prefix` and 128 bits in lowercase hex.
pub(crate) fn is_prefixed_random(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_as_the_specification_spells_them() {
        assert_eq!(code_name(Code::InvalidArgument), "INVALID_ARGUMENT");
        assert_eq!(code_name(Code::Ok), "OK");
        assert_eq!(code_name(Code::NotFound), "NOT_FOUND");
    }

    #[test]
    fn ids_are_a_prefix_and_32_lowercase_hex_digits() {
        assert!(is_prefixed_random(
            "env-0123456789abcdef0123456789abcdef",
            "env-"
        ));
        assert!(!is_prefixed_random(
            "env-0123456789ABCDEF0123456789abcdef",
            "env-"
        ));
        assert!(!is_prefixed_random(
            "ses-0123456789abcdef0123456789abcdef",
            "env-"
        ));
        assert!(!is_prefixed_random("env-0123", "env-"));
    }

    #[test]
    fn long_messages_are_clipped() {
        let long = "x".repeat(10_000);
        let Problem::Fail { got, .. } = Problem::fail("short", long) else {
            unreachable!()
        };
        assert!(got.ends_with("… (10000 bytes)"), "{got}");
        assert!(got.len() < 300);
    }
}
