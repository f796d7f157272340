import Testing

extension Trait where Self == TimeLimitTrait {
    /// Every suite here runs under it: a test that waits for something that never comes (a listener, a waiter, a
    /// sleeper on a manual clock) is cancelled and fails after ten minutes instead of holding the CI run until its own
    /// limit. No wait in these tests runs on a timer; this is the one bound.
    static var bounded: Self { .timeLimit(.minutes(10)) }
}
