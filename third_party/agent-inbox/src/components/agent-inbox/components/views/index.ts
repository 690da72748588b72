export * from "./InterruptedDescriptionView";
export * from "./NonInterruptedDescriptionView";
export * from "./EmptyStateView";
export * from "./ThreadStateView";
