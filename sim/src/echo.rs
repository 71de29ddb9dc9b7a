//! Quoting what a peer sent back to it in an error message, at a bounded length.
//!
//! An id or a shape arrives from a client and may be megabytes long; repeated whole, it would
//! make an error message larger than the client accepts, which then sees a transport error
//! instead of the answer. Every message that repeats a value a peer chose goes through [`Echo`].

use std::fmt::{self, Write};

/// The most characters of a peer's value an error message repeats.
pub const ECHO_LIMIT: usize = 64;

/// A value a peer sent, shown in a message: whole when short, otherwise its first
/// [`ECHO_LIMIT`] characters, `…`, and its length.
///
/// A string is quoted and escaped like `{:?}`; a slice is listed like `{:?}`. Formatting reads
/// only the part it shows, so a value of any size costs the same.
///
/// ```
/// use ale_sim::Echo;
/// assert_eq!(Echo("env-1").to_string(), r#""env-1""#);
/// assert_eq!(Echo(&[2usize, 3][..]).to_string(), "[2, 3]");
/// let long = "x".repeat(100_000);
/// assert_eq!(
///     Echo(long.as_str()).to_string(),
///     format!("\"{}…\" (100000 bytes)", "x".repeat(64)),
/// );
/// let shape = vec![1usize; 3_000_000];
/// assert!(Echo(shape.as_slice()).to_string().ends_with("…] (3000000 elements)"));
/// ```
#[derive(Clone, Copy)]
pub struct Echo<'a, T: ?Sized>(pub &'a T);

impl fmt::Display for Echo<'_, str> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        match text.char_indices().nth(ECHO_LIMIT) {
            None => write!(f, "{text:?}"),
            Some((cut, _)) => {
                let shown = format!("{:?}", &text[..cut]);
                // The Debug form ends in the closing quote; the ellipsis goes inside it.
                let open = shown.strip_suffix('"').unwrap_or(&shown);
                write!(f, "{open}…\" ({} bytes)", text.len())
            }
        }
    }
}

impl<T: fmt::Debug> fmt::Display for Echo<'_, [T]> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items = self.0;
        let mut shown = Bounded::default();
        // Writes stop at the limit; elements past it are never formatted.
        let mut list = || -> fmt::Result {
            shown.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    shown.write_str(", ")?;
                }
                write!(shown, "{item:?}")?;
            }
            shown.write_char(']')
        };
        if list().is_ok() {
            return f.write_str(&shown.text);
        }
        write!(f, "{}…] ({} elements)", shown.text, items.len())
    }
}

/// A string that takes at most [`ECHO_LIMIT`] characters and fails the write that would pass it.
#[derive(Default)]
struct Bounded {
    text: String,
    chars: usize,
}

impl Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            if self.chars == ECHO_LIMIT {
                return Err(fmt::Error);
            }
            self.text.push(c);
            self.chars += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_shown_whole() {
        assert_eq!(Echo("cartpole").to_string(), r#""cartpole""#);
        assert_eq!(Echo("").to_string(), r#""""#);
        assert_eq!(Echo(&[] as &[i64]).to_string(), "[]");
        assert_eq!(Echo(&[-1i64, 4][..]).to_string(), "[-1, 4]");
    }

    #[test]
    fn a_value_is_cut_exactly_when_it_is_longer_than_the_limit() {
        let exact = "a".repeat(ECHO_LIMIT);
        assert_eq!(Echo(exact.as_str()).to_string(), format!("{exact:?}"));
        let over = "a".repeat(ECHO_LIMIT + 1);
        assert!(Echo(over.as_str()).to_string().ends_with("a…\" (65 bytes)"));
        for n in 0..40 {
            let list: Vec<u8> = (0..n).map(|i| (i % 2) * 10).collect();
            let whole = format!("{list:?}");
            let text = Echo(list.as_slice()).to_string();
            if whole.chars().count() <= ECHO_LIMIT {
                assert_eq!(text, whole);
            } else {
                assert!(text.ends_with(&format!("…] ({n} elements)")), "{text}");
                assert!(whole.starts_with(text.split('…').next().unwrap()), "{text}");
            }
        }
    }

    #[test]
    fn long_values_are_cut_and_say_how_long_they_were() {
        let id = "é".repeat(1_000_000);
        let text = Echo(id.as_str()).to_string();
        assert_eq!(
            text,
            format!("\"{}…\" (2000000 bytes)", "é".repeat(ECHO_LIMIT))
        );

        let shape = vec![7usize; 3_000_000];
        let text = Echo(shape.as_slice()).to_string();
        assert!(text.starts_with("[7, 7, "), "{text}");
        assert!(text.ends_with("…] (3000000 elements)"), "{text}");
        assert!(text.chars().count() < ECHO_LIMIT + 30, "{text}");
    }

    #[test]
    fn control_characters_are_escaped_and_still_bounded() {
        let id = "\0".repeat(10_000);
        let text = Echo(id.as_str()).to_string();
        assert!(text.starts_with(r#""\0\0"#), "{text}");
        assert!(text.ends_with("…\" (10000 bytes)"), "{text}");
        assert!(text.len() < 4 * ECHO_LIMIT, "{text}");
    }
}
