//! Console themes: TOML files of named colours. The bundled ones (`tui/themes/*.toml`) are
//! embedded at build; a theme of the same name in the user's theme dir replaces one, others add
//! to the list. Every colour the console draws with comes from here.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use ale_sim::Role;
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

const EMBEDDED: &[(&str, &str)] = &[
    ("dark.toml", include_str!("../../themes/dark.toml")),
    ("light.toml", include_str!("../../themes/light.toml")),
    (
        "high-contrast.toml",
        include_str!("../../themes/high-contrast.toml"),
    ),
    (
        "colorblind.toml",
        include_str!("../../themes/colorblind.toml"),
    ),
];

/// Defines [`Theme`] with one `Color` field per key, [`KEYS`], and the reading of a theme's
/// `[colors]` table, from one list of keys.
macro_rules! theme_colours {
    ($($key:ident),* $(,)?) => {
        /// The colour keys every theme must define, under `[colors]`.
        pub const KEYS: &[&str] = &[$(stringify!($key)),*];

        #[derive(Debug, Clone, PartialEq)]
        pub struct Theme {
            pub name: String,
            $(pub $key: Color,)*
        }

        impl Theme {
            /// A theme named `name` whose colours `color` reads by key.
            fn from_colours(
                name: String,
                color: impl Fn(&str) -> Result<Color, ThemeError>,
            ) -> Result<Theme, ThemeError> {
                Ok(Theme {
                    name,
                    $($key: color(stringify!($key))?,)*
                })
            }
        }
    };
}

theme_colours![
    background,
    text,
    muted,
    accent,
    border,
    border_focused,
    selection_fg,
    selection_bg,
    ok,
    warn,
    error,
    chart_reward,
    chart_return,
    chart_mean,
    chart_target,
    bar_completed,
    bar_failed,
    sim_ground,
    sim_body,
    sim_limb,
    sim_joint,
    sim_goal,
    sim_hazard,
    sim_sensor,
];

/// A theme file that cannot be used; the message names the file and the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("theme {file}: {problem}")]
pub struct ThemeError {
    pub file: String,
    pub problem: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    colors: toml::Table,
}

impl Theme {
    /// Parses and checks one theme file.
    pub fn parse(file: &str, text: &str) -> Result<Theme, ThemeError> {
        let fail = |problem: String| ThemeError {
            file: file.to_string(),
            problem,
        };
        let raw: ThemeFile = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
        if let Some(extra) = raw.colors.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(fail(format!(
                "unknown key `colors.{extra}`; the keys are: {}",
                KEYS.join(", ")
            )));
        }
        let color = |key: &str| -> Result<Color, ThemeError> {
            let value = raw
                .colors
                .get(key)
                .ok_or_else(|| fail(format!("missing `colors.{key}`")))?;
            let text = value.as_str().ok_or_else(|| {
                fail(format!(
                    "`colors.{key}` must be a string like \"#88c0d0\", got {value}"
                ))
            })?;
            Color::from_str(text).map_err(|_| {
                fail(format!(
                    "`colors.{key}` is {text:?}, not a colour: use \"#rrggbb\" or a name like \"blue\""
                ))
            })
        };
        Theme::from_colours(raw.name, color)
    }

    pub fn base(&self) -> Style {
        Style::default().fg(self.text).bg(self.background)
    }

    pub fn muted(&self) -> Style {
        Style::default().fg(self.muted)
    }

    pub fn accent(&self) -> Style {
        Style::default()
            .fg(self.accent)
            .add_modifier(Modifier::BOLD)
    }

    pub fn selected(&self) -> Style {
        Style::default().fg(self.selection_fg).bg(self.selection_bg)
    }

    pub fn border(&self, focused: bool) -> Style {
        Style::default().fg(if focused {
            self.border_focused
        } else {
            self.border
        })
    }

    /// The colour a drawing's shape is painted with.
    pub fn role(&self, role: Role) -> Color {
        match role {
            Role::Ground => self.sim_ground,
            Role::Body => self.sim_body,
            Role::Limb => self.sim_limb,
            Role::Joint => self.sim_joint,
            Role::Goal => self.sim_goal,
            Role::Hazard => self.sim_hazard,
            Role::Sensor => self.sim_sensor,
        }
    }
}

/// The themes available: the bundled ones, replaced or extended by `user_dir`'s `*.toml`.
pub fn load_all(user_dir: Option<&Path>) -> Result<Vec<Theme>, ThemeError> {
    let mut themes: Vec<Theme> = Vec::new();
    for (file, text) in EMBEDDED {
        themes.push(Theme::parse(&format!("tui/themes/{file}"), text)?);
    }
    if let Some(dir) = user_dir.filter(|d| d.is_dir()) {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| ThemeError {
                file: dir.display().to_string(),
                problem: e.to_string(),
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for path in files {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| ThemeError {
                file: name.clone(),
                problem: e.to_string(),
            })?;
            let theme = Theme::parse(&name, &text)?;
            match themes.iter_mut().find(|t| t.name == theme.name) {
                Some(existing) => *existing = theme,
                None => themes.push(theme),
            }
        }
    }
    Ok(themes)
}

/// `$XDG_CONFIG_HOME/ale/themes`, or `~/.config/ale/themes`.
pub fn user_theme_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("ale/themes"));
    }
    std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .map(|h| PathBuf::from(h).join(".config/ale/themes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_themes_load_and_include_the_required_four() {
        let themes = load_all(None).unwrap();
        let names: Vec<&str> = themes.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["dark", "light", "high-contrast", "colorblind"]);
    }

    #[test]
    fn a_bad_or_missing_colour_names_the_file_and_key() {
        let dark = EMBEDDED[0].1;
        let bad = dark.replace("accent = \"#88c0d0\"", "accent = \"#zz0000\"");
        let err = Theme::parse("my.toml", &bad).unwrap_err().to_string();
        assert_eq!(
            err,
            "theme my.toml: `colors.accent` is \"#zz0000\", not a colour: use \"#rrggbb\" or a name like \"blue\""
        );
        let missing = dark.replace("accent = \"#88c0d0\"\n", "");
        let err = Theme::parse("my.toml", &missing).unwrap_err().to_string();
        assert_eq!(err, "theme my.toml: missing `colors.accent`");
        let typo = dark.replace("accent =", "acent =");
        let err = Theme::parse("my.toml", &typo).unwrap_err().to_string();
        assert!(
            err.starts_with("theme my.toml: unknown key `colors.acent`"),
            "{err}"
        );
        let number = dark.replace("accent = \"#88c0d0\"", "accent = 3");
        let err = Theme::parse("my.toml", &number).unwrap_err().to_string();
        assert!(err.contains("`colors.accent` must be a string"), "{err}");
    }

    #[test]
    fn a_user_theme_replaces_a_bundled_one_and_adds_others() {
        let dir = tempfile::tempdir().unwrap();
        let dark = EMBEDDED[0].1.replace("#88c0d0", "#ff0000");
        std::fs::write(dir.path().join("mine.toml"), &dark).unwrap();
        std::fs::write(
            dir.path().join("extra.toml"),
            dark.replace("name = \"dark\"", "name = \"extra\""),
        )
        .unwrap();
        let themes = load_all(Some(dir.path())).unwrap();
        assert_eq!(themes.len(), 5);
        assert_eq!(themes[0].accent, Color::Rgb(255, 0, 0));
        std::fs::write(
            dir.path().join("zz-broken.toml"),
            "name = \"x\"\n[colors]\n",
        )
        .unwrap();
        let err = load_all(Some(dir.path())).unwrap_err();
        assert!(
            err.file.ends_with("zz-broken.toml") && err.problem.contains("missing"),
            "{err}"
        );
    }
}
