import Foundation
import SettleModel

/// The hand-off between a pass's verification workers and its recorders: a store's answer about
/// a claimed order waits here to be written to the ledger, so the worker goes straight back to
/// the store instead of waiting for the commit. The recorders' writes are deferrable
/// (`CommitPace`): waiting a moment for one another, several share each commit's fsync, at no
/// cost to the rate at which the stores are asked.
///
/// The queue holds at most `capacity` answers: a worker that finds it full waits, so answers
/// never pile up unrecorded (each order stays `verifying` under its lease until recorded; a crash
/// leaves it to the rescue, which asks the store again).
package final class AnswerQueue: @unchecked Sendable {
    package struct Answer: Sendable {
        package var order: Order
        package var verification: Verification
        /// A place in the delivery queue kept for it (`DeliveryQueue.reserve`).
        package var deliveryReserved: Bool
    }

    package let capacity: Int
    /// One mutex and two conditions (each change wakes only a waiter it can help, as in
    /// `DeliveryQueue`), owned here and destroyed in deinit.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Recorders wait here for answers (or for the end of the pass).
    private let hasAnswers = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Verification workers wait here for room.
    private let hasRoom = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var answers: [Answer] = []
    private var producing = true

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(hasAnswers, nil)
        pthread_cond_init(hasRoom, nil)
    }

    deinit {
        pthread_cond_destroy(hasRoom)
        pthread_cond_destroy(hasAnswers)
        pthread_mutex_destroy(mutex)
        hasRoom.deallocate()
        hasAnswers.deallocate()
        mutex.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Queues `answer`, waiting while the queue is full. The recorder is woken once the lock is
    /// released (as in `DeliveryQueue`): woken under it, it would find the mutex held and sleep
    /// again on it, one more futex wait and wake an answer.
    package func put(_ answer: Answer) {
        locked {
            while answers.count >= capacity { pthread_cond_wait(hasRoom, mutex) }
            answers.append(answer)
        }
        pthread_cond_signal(hasAnswers)
    }

    /// The oldest answer, waiting while none is queued and more may come; nil once the workers
    /// are done and every answer was taken.
    package func take() -> Answer? {
        let answer: Answer? = locked {
            while answers.isEmpty && producing { pthread_cond_wait(hasAnswers, mutex) }
            guard !answers.isEmpty else { return nil }
            return answers.removeFirst()
        }
        if answer != nil { pthread_cond_signal(hasRoom) }
        return answer
    }

    /// The workers are done: recorders stop once the queue is empty.
    package func producersFinished() {
        locked {
            producing = false
            pthread_cond_broadcast(hasAnswers)
        }
    }
}
