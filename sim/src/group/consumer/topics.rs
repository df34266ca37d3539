//! The slice of cluster metadata the coordinator needs: topic names, ids and partition counts.
//!
//! Kafka's coordinator reads the KRaft `MetadataImage`; here the broker passes a snapshot in and
//! replaces it through `ConsumerGroupCoordinator::on_topics_changed`.

use std::collections::BTreeMap;

use uuid::Uuid;

/// One topic as the coordinator sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicImage {
    /// The topic id members see in assignments.
    pub id: Uuid,
    /// Number of partitions, `0..partition_count`.
    pub partition_count: i32,
}

/// All topics of the cluster, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicsImage {
    by_name: BTreeMap<String, TopicImage>,
}

impl TopicsImage {
    /// Adds or replaces topic `name`.
    pub fn with_topic(mut self, name: &str, id: Uuid, partition_count: i32) -> Self {
        self.upsert(name, id, partition_count);
        self
    }

    /// Adds or replaces topic `name`.
    pub fn upsert(&mut self, name: &str, id: Uuid, partition_count: i32) {
        self.by_name.insert(
            name.to_owned(),
            TopicImage {
                id,
                partition_count,
            },
        );
    }

    /// Deletes topic `name`.
    pub fn remove(&mut self, name: &str) {
        self.by_name.remove(name);
    }

    /// Topic `name`, if it exists.
    pub fn topic(&self, name: &str) -> Option<&TopicImage> {
        self.by_name.get(name)
    }

    /// The name of the topic with id `id`, if it exists.
    pub fn name_of(&self, id: Uuid) -> Option<&str> {
        self.by_name
            .iter()
            .find(|(_, topic)| topic.id == id)
            .map(|(name, _)| name.as_str())
    }

    /// All topics in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &TopicImage)> {
        self.by_name
            .iter()
            .map(|(name, topic)| (name.as_str(), topic))
    }

    /// Names whose topic differs between `self` and `other` (added, removed, re-created or
    /// resized): the topics whose subscribers need a metadata refresh.
    pub fn changed_names(&self, other: &TopicsImage) -> Vec<String> {
        let mut names: Vec<String> = self
            .by_name
            .iter()
            .filter(|(name, topic)| other.by_name.get(*name) != Some(topic))
            .map(|(name, _)| name.clone())
            .collect();
        names.extend(
            other
                .by_name
                .keys()
                .filter(|name| !self.by_name.contains_key(*name))
                .cloned(),
        );
        names.sort();
        names
    }
}
