//! Typed arenas. IR nodes refer to each other through `Handle<T>` indices; source spans live
//! in a side table beside the nodes so that the nodes themselves stay plain data.

use cake_diag::Span;
use std::fmt;
use std::marker::PhantomData;

/// Index of a `T` in its `Arena<T>`. Copy, comparable, and typed so that a barrier handle can
/// never be used where a view handle is expected.
pub struct Handle<T> {
    index: u32,
    _marker: PhantomData<fn() -> T>,
}

impl<T> Handle<T> {
    pub fn index(self) -> usize {
        self.index as usize
    }
    pub fn from_index(index: usize) -> Self {
        Handle {
            index: index as u32,
            _marker: PhantomData,
        }
    }
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Handle<T> {}
impl<T> PartialEq for Handle<T> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}
impl<T> Eq for Handle<T> {}
impl<T> PartialOrd for Handle<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Handle<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.index.cmp(&other.index)
    }
}
impl<T> std::hash::Hash for Handle<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.index.hash(state)
    }
}
impl<T> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.index)
    }
}

/// A growable store of `T` with one span per item.
#[derive(Clone, Debug)]
pub struct Arena<T> {
    items: Vec<T>,
    spans: Vec<Span>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena {
            items: Vec::new(),
            spans: Vec::new(),
        }
    }
}

impl<T> Arena<T> {
    pub fn push(&mut self, item: T, span: Span) -> Handle<T> {
        self.items.push(item);
        self.spans.push(span);
        Handle::from_index(self.items.len() - 1)
    }
    pub fn span(&self, h: Handle<T>) -> Span {
        self.spans[h.index()]
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = (Handle<T>, &T)> {
        self.items
            .iter()
            .enumerate()
            .map(|(i, t)| (Handle::from_index(i), t))
    }
    pub fn handles(&self) -> impl Iterator<Item = Handle<T>> {
        (0..self.items.len()).map(Handle::from_index)
    }
}

impl<T> std::ops::Index<Handle<T>> for Arena<T> {
    type Output = T;
    fn index(&self, h: Handle<T>) -> &T {
        &self.items[h.index()]
    }
}
impl<T> std::ops::IndexMut<Handle<T>> for Arena<T> {
    fn index_mut(&mut self, h: Handle<T>) -> &mut T {
        &mut self.items[h.index()]
    }
}
