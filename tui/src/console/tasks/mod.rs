//! The tasks view: every task the evaluator lists, filtered by typing, and the selected one's
//! spec. The selection is shared: the eval view runs the task selected here.

mod draw;

pub use draw::draw;

use ale_proto::TaskSpec;
use crossterm::event::{KeyCode, KeyEvent};

use super::bindings::Command;
use super::outcome::Outcome;
use super::view::{InputMode, View};

/// Lines the spec pane scrolls by on a page key.
const SPEC_PAGE: u16 = 10;

#[derive(Debug, Default)]
pub struct Tasks {
    /// Every task, as the evaluator listed them.
    pub list: Vec<TaskSpec>,
    /// The selection, an index into [`Tasks::visible`].
    pub cursor: usize,
    pub filter: String,
    /// The spec pane's first line shown; back to 0 when the selection changes.
    pub spec_scroll: u16,
    /// The furthest the spec pane scrolls at the size it was last drawn (set by drawing).
    pub spec_scroll_max: std::cell::Cell<u16>,
}

impl Tasks {
    /// The tasks the filter lets through: those whose id matches first, then those whose
    /// title or simulator does.
    pub fn visible(&self) -> Vec<&TaskSpec> {
        let needle = self.filter.to_lowercase();
        let by_id = |t: &&TaskSpec| t.id.to_lowercase().contains(&needle);
        let by_other = |t: &&TaskSpec| {
            !by_id(t)
                && (t.title.to_lowercase().contains(&needle)
                    || t.sim.to_lowercase().contains(&needle))
        };
        self.list
            .iter()
            .filter(by_id)
            .chain(self.list.iter().filter(by_other))
            .collect()
    }

    pub fn selected(&self) -> Option<&TaskSpec> {
        self.visible().get(self.cursor).copied()
    }

    pub fn set_list(&mut self, list: Vec<TaskSpec>) {
        self.list = list;
        self.cursor = self.cursor.min(self.list.len().saturating_sub(1));
    }

    pub fn select_previous(&mut self) {
        self.select(self.cursor.saturating_sub(1));
    }

    pub fn select_next(&mut self) {
        let n = self.visible().len();
        self.select((self.cursor + 1).min(n.saturating_sub(1)));
    }

    /// Selects the visible task at `index`; another task's spec is read from its top.
    fn select(&mut self, index: usize) {
        if index != self.cursor {
            self.spec_scroll = 0;
        }
        self.cursor = index;
    }

    /// A click on the list's `row`.
    pub fn click(&mut self, row: usize) {
        if row < self.visible().len() {
            self.select(row);
        }
    }

    pub fn on_command(&mut self, command: Command) -> Vec<Outcome> {
        match command {
            Command::Up => self.select_previous(),
            Command::Down => self.select_next(),
            Command::PageUp => self.spec_scroll = self.spec_scroll.saturating_sub(SPEC_PAGE),
            Command::PageDown => {
                self.spec_scroll = self
                    .spec_scroll
                    .saturating_add(SPEC_PAGE)
                    .min(self.spec_scroll_max.get());
            }
            Command::Filter => return vec![Outcome::Input(InputMode::Filter)],
            Command::Back => self.filter.clear(),
            Command::Open => {
                if let Some(task) = self.selected() {
                    return vec![Outcome::OpenPractice {
                        task_id: task.id.clone(),
                    }];
                }
            }
            Command::Evaluate if self.selected().is_some() => {
                return vec![Outcome::Show(View::Eval)];
            }
            _ => {}
        }
        Vec::new()
    }

    /// A key bound to nothing here: typing a letter starts filtering.
    pub fn on_unbound_key(&mut self, key: KeyEvent) -> Vec<Outcome> {
        match key.code {
            KeyCode::Char(c) if c.is_alphanumeric() => {
                self.filter.push(c);
                self.select(0);
                vec![Outcome::Input(InputMode::Filter)]
            }
            _ => Vec::new(),
        }
    }

    /// A key while the filter is typed.
    pub fn on_filter_key(&mut self, key: KeyEvent) -> Vec<Outcome> {
        let mut outcomes = Vec::new();
        match key.code {
            KeyCode::Esc => {
                self.filter.clear();
                outcomes.push(Outcome::Input(InputMode::Commands));
            }
            KeyCode::Enter => outcomes.push(Outcome::Input(InputMode::Commands)),
            KeyCode::Backspace => {
                self.filter.pop();
            }
            KeyCode::Char(c) => self.filter.push(c),
            _ => {}
        }
        self.select(0);
        outcomes
    }
}
